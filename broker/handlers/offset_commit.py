"""OffsetCommit (8): store committed offsets after checking the member's generation.

All partitions of one request go to `__consumer_offsets` as one record batch, so a commit is
persisted whole or not at all.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.offsets import CommittedOffset, OffsetChange
from broker.handlers._build import NO_THROTTLE, build, partition_errors
from broker.handlers._offset_store_errors import STORE_ERRORS, store_error_code
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.offsets")


def _codes(state: BrokerState, body: Any) -> tuple[dict[tuple[str, int], ErrorCode], list[OffsetChange]]:
    try:
        state.check_coordinator(body.group_id)
        state.groups.validate_commit(body.group_id, body.generation_id_or_member_epoch, body.member_id,
                                     getattr(body, "group_instance_id", None),  # v7+
                                     has_offsets=state.offsets.has_offsets(body.group_id))
        group_error = ErrorCode.none
    except KafkaApiError as exc:
        group_error = exc.code
    codes: dict[tuple[str, int], ErrorCode] = {}
    changes = []
    for topic in body.topics:
        known = state.topics.get(topic.name)
        for part in topic.partitions:
            code = group_error
            if code is ErrorCode.none and (known is None or not 0 <= part.partition_index < known.partitions):
                code = ErrorCode.unknown_topic_or_partition
            codes[(topic.name, part.partition_index)] = code
            if code is ErrorCode.none:
                value = CommittedOffset.committed(
                    part.committed_offset, getattr(part, "committed_leader_epoch", -1), part.committed_metadata
                )
                changes.append(OffsetChange(topic.name, part.partition_index, value))
    return codes, changes


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    codes, changes = _codes(state, body)
    try:
        state.offsets.commit_many(body.group_id, changes)
        if changes:
            await state.wait_for_offsets_replicated(body.group_id, 10_000)
    except STORE_ERRORS as exc:
        log.error("could not store offsets of group %r: %s", body.group_id, exc)
        for change in changes:
            codes[(change.topic, change.partition)] = store_error_code(exc)
    topics = tuple(partition_errors(cls, "OffsetCommit", topic, lambda *tp: codes[tp]) for topic in body.topics)
    return build(cls, throttle_time=NO_THROTTLE, topics=topics)
