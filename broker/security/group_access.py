"""Access rules of the consumer-group requests: membership, offsets, the coordinator's lookup and
listings (Kafka's KafkaApis)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from broker.handlers._build import NO_THROTTLE, build, nested, partition_errors
from broker.protocol.apis import api_key, response_class
from broker.security.acls import Operation
from broker.security.rule_kinds import (
    GAF,
    GROUP,
    NO_OPERATIONS,
    TAF,
    TOPIC,
    TXN,
    TXN_AF,
    Caller,
    Handler,
    Rule,
    filtered,
    per_item,
    whole,
)

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

# --- Groups --------------------------------------------------------------------------------------------

def _group_denied_whole(cls: Any, request: Request) -> Any:
    version = request.header.api_version
    name_nullable = request.header.api_key == api_key("sync_group") or version >= 7
    return build(cls, throttle_time=NO_THROTTLE, error_code=GAF, generation_id=-1, protocol_type=None,
                 protocol_name=None if name_nullable else "", leader="", skip_assignment=False, member_id="",
                 members=(), assignment=b"")


def _group_read(caller: Caller, request: Request) -> bool:
    return caller.may(Operation.READ, GROUP, request.body.group_id)


async def _offset_commit(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    group_ok = caller.may(Operation.READ, GROUP, body.group_id)

    def answer(cls: Any, topic: Any, request: Request) -> Any:
        return partition_errors(cls, "OffsetCommit", topic, lambda *_: TAF if group_ok else GAF)

    if not group_ok:
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, topics=tuple(answer(cls, t, request) for t in body.topics))
    rule = per_item("topics", lambda c, s, t: c.may(Operation.READ, TOPIC, t.name), answer, "topics")
    return await rule(caller, state, request, handler)


def _offset_delete_topic_denied(cls: Any, topic: Any, request: Request) -> Any:
    return partition_errors(cls, "OffsetDelete", topic, lambda *_: TAF)


_offset_delete_topics = per_item("topics", lambda c, s, t: c.may(Operation.READ, TOPIC, t.name),
                                  _offset_delete_topic_denied, "topics")


async def _offset_delete(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    """As Kafka's KafkaApis: DELETE on the group for the whole request, then READ on each topic."""
    if not caller.may(Operation.DELETE, GROUP, request.body.group_id):
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, error_code=GAF, throttle_time=NO_THROTTLE, topics=())
    return await _offset_delete_topics(caller, state, request, handler)


def _hide_offsets(caller: Caller, topics: Iterable[Any]) -> tuple[Any, ...]:
    """Committed offsets of topics the caller may not describe are answered TOPIC_AUTHORIZATION_FAILED."""
    out = []
    for topic in topics:
        if not caller.may(Operation.DESCRIBE, TOPIC, topic.name):
            topic = dataclasses.replace(topic, partitions=tuple(
                dataclasses.replace(p, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=TAF)
                for p in topic.partitions))
        out.append(topic)
    return tuple(out)


async def _offset_fetch(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    if hasattr(body, "groups"):  # v8+: several groups
        def answer(cls: Any, group: Any, request: Request) -> Any:
            return build(nested(cls, "OffsetFetchResponseGroup"), group_id=group.group_id, topics=(), error_code=GAF)

        rule = per_item("groups", lambda c, s, g: c.may(Operation.DESCRIBE, GROUP, g.group_id), answer, "groups")
        response = await rule(caller, state, request, handler)
        return dataclasses.replace(response, groups=tuple(
            dataclasses.replace(g, topics=_hide_offsets(caller, g.topics)) for g in response.groups))
    if not caller.may(Operation.DESCRIBE, GROUP, body.group_id):
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, topics=(), error_code=GAF)
    response = await handler(state, request)
    return dataclasses.replace(response, topics=_hide_offsets(caller, response.topics))


def _coordinator_allowed(caller: Caller, key_type: int, key: str) -> bool:
    if key_type == 1:
        return caller.may(Operation.DESCRIBE, TXN, key)
    return caller.may(Operation.DESCRIBE, GROUP, key)


async def _find_coordinator(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    key_type = getattr(body, "key_type", 0)
    code = TXN_AF if key_type == 1 else GAF
    if hasattr(body, "coordinator_keys"):
        rule = per_item(
            "coordinator_keys", lambda c, s, k: _coordinator_allowed(c, key_type, k),
            lambda cls, k, r: build(nested(cls, "Coordinator"), key=k, node_id=-1, host="", port=-1, error_code=code,
                                    error_message=code.name), "coordinators")
        return await rule(caller, state, request, handler)
    if _coordinator_allowed(caller, key_type, body.key):
        return await handler(state, request)
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=code.name, node_id=-1, host="", port=-1)


def _list_groups(caller: Caller, response: Any, request: Request) -> Any:
    if caller.may_cluster(Operation.DESCRIBE):
        return response
    return dataclasses.replace(response, groups=tuple(
        g for g in response.groups if caller.may(Operation.DESCRIBE, GROUP, g.group_id)))




GROUP_RULES: dict[int, Rule] = {  # api key -> rule
    api_key("join_group"): whole(_group_read, _group_denied_whole),
    api_key("sync_group"): whole(_group_read, _group_denied_whole),
    api_key("heartbeat"): whole(_group_read, _group_denied_whole),
    api_key("leave_group"): whole(_group_read, _group_denied_whole),
    api_key("offset_commit"): _offset_commit,
    api_key("offset_fetch"): _offset_fetch,
    api_key("find_coordinator"): _find_coordinator,
    api_key("describe_groups"): per_item(
        "groups", lambda c, s, g: c.may(Operation.DESCRIBE, GROUP, g),
        lambda cls, g, r: build(nested(cls, "DescribedGroup"), error_code=GAF, group_id=g, group_state="",
                                protocol_type="", protocol_data="", members=(),
                                authorized_operations=NO_OPERATIONS), "groups"),
    api_key("delete_groups"): per_item(
        "groups_names", lambda c, s, g: c.may(Operation.DELETE, GROUP, g),
        lambda cls, g, r: build(nested(cls, "DeletableGroupResult"), group_id=g, error_code=GAF), "results"),
    api_key("offset_delete"): _offset_delete,
    api_key("list_groups"): filtered(_list_groups),
}
