"""OffsetDelete (47): delete some committed offsets of a group (KIP-496), as Kafka's group coordinator does.

The whole request fails for a group that does not exist (GROUP_ID_NOT_FOUND) and for a non-empty group whose
protocol type is not "consumer" (NON_EMPTY_GROUP: ClassicGroup.validateOffsetDelete). Per partition: an unknown
topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a topic some member subscribes to keeps its offsets
(GROUP_SUBSCRIBED_TO_TOPIC, so a running consumer does not lose its position); any other partition is NONE, its
offset deleted if it had one.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.consumer_protocol import subscribed_topics
from broker.coordinator.group_model import Group, GroupState
from broker.coordinator.offsets import OffsetChange
from broker.handlers._build import NO_THROTTLE, build, partition_errors
from broker.handlers._offset_store_errors import STORE_ERRORS, store_error_code
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.offsets")

_EVERY_TOPIC = None  # a member whose subscription cannot be read counts as subscribed to every topic


def _group_error(group: Group | None, has_offsets: bool) -> ErrorCode:
    if (group is None and not has_offsets) or (group is not None and group.state is GroupState.DEAD):
        return ErrorCode.group_id_not_found
    if group is not None and group.members and group.protocol_type != "consumer":
        return ErrorCode.non_empty_group
    return ErrorCode.none


def _subscribed(group: Group | None) -> frozenset[str] | None:
    """Kafka's ClassicGroup.computeSubscribedTopics: the union of the members' subscriptions of the group's
    protocol; none for a group without members or of another protocol type."""
    if group is None or group.protocol_type != "consumer" or not group.members:
        return frozenset()
    if group.protocol_name is None:
        return _EVERY_TOPIC
    topics: set[str] = set()
    for member in group.members.values():
        parsed = subscribed_topics(dict(member.protocols).get(group.protocol_name, b""))
        if parsed is None:
            return _EVERY_TOPIC
        topics |= parsed
    return frozenset(topics)


def _code(state: BrokerState, subscribed: frozenset[str] | None, topic: str, partition: int) -> ErrorCode:
    known = state.topics.get(topic)
    if known is None or not 0 <= partition < known.partitions:
        return ErrorCode.unknown_topic_or_partition
    if subscribed is _EVERY_TOPIC or topic in subscribed:
        return ErrorCode.group_subscribed_to_topic
    return ErrorCode.none


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)

    def failed(code: ErrorCode) -> Any:
        return build(cls, error_code=code, throttle_time=NO_THROTTLE, topics=())

    if not body.group_id:
        return failed(ErrorCode.invalid_group_id)
    try:
        state.check_coordinator(body.group_id)
    except KafkaApiError as exc:
        return failed(exc.code)
    group = state.groups.lookup(body.group_id)
    error = _group_error(group, state.offsets.has_offsets(body.group_id))
    if error is not ErrorCode.none:
        return failed(error)
    subscribed = _subscribed(group)
    codes = {(t.name, p.partition_index): _code(state, subscribed, t.name, p.partition_index)
             for t in body.topics for p in t.partitions}
    deleted = [OffsetChange(topic, partition, None) for (topic, partition), code in codes.items()
               if code is ErrorCode.none and state.offsets.fetch(body.group_id, topic, partition) is not None]
    try:
        state.offsets.commit_many(body.group_id, deleted)
        if deleted:
            await state.wait_for_offsets_replicated(body.group_id, 10_000)
    except STORE_ERRORS as exc:
        log.error("could not delete offsets of group %r: %s", body.group_id, exc)
        return failed(store_error_code(exc))
    topics = tuple(partition_errors(cls, "OffsetDelete", t, lambda *tp: codes[tp]) for t in body.topics)
    return build(cls, error_code=ErrorCode.none, throttle_time=NO_THROTTLE, topics=topics)
