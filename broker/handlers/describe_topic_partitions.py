"""DescribeTopicPartitions (75): topics and partitions in name order, paged by a cursor."""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import _placement
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.topics import Topic

_NO_OPERATIONS = -2147483648
_ZERO_ID = uuid.UUID(int=0)


def _partition(cls: Any, view: _placement.PartitionView, index: int) -> Any:
    return build(nested(cls, "DescribeTopicPartitionsResponsePartition"),
                 error_code=ErrorCode.none if view.leader >= 0 else ErrorCode.leader_not_available,
                 partition_index=index, leader_id=view.leader, leader_epoch=view.leader_epoch,
                 replica_nodes=view.replicas, isr_nodes=view.isr, eligible_leader_replicas=(), last_known_elr=(),
                 offline_replicas=view.offline)


def _topic(cls: Any, name: str, topic: Topic | None, partitions: tuple[Any, ...]) -> Any:
    return build(nested(cls, "DescribeTopicPartitionsResponseTopic"),
                 error_code=ErrorCode.none if topic else ErrorCode.unknown_topic_or_partition, name=name,
                 topic_id=topic.topic_id if topic else _ZERO_ID, is_internal=bool(topic and topic.is_internal),
                 partitions=partitions, topic_authorized_operations=_NO_OPERATIONS)


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    names = sorted({t.name for t in body.topics} if body.topics else {t.name for t in state.topics.all()})
    cursor = body.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    budget = max(int(body.response_partition_limit), 1)
    entries, next_cursor = [], None
    for name in names:
        topic = state.topics.get(name)
        if topic is None:
            entries.append(_topic(cls, name, None, ()))
            continue
        first = cursor.partition_index if cursor is not None and cursor.topic_name == name else 0
        if budget == 0:
            next_cursor = build(nested(cls, "Cursor"), topic_name=name, partition_index=first)
            break
        last = min(topic.partitions, first + budget)
        views = _placement.partitions(state, topic)
        shown = range(first, min(last, len(views)))
        entries.append(_topic(cls, name, topic, tuple(_partition(cls, views[i], i) for i in shown)))
        budget -= last - first
        if last < topic.partitions:
            next_cursor = build(nested(cls, "Cursor"), topic_name=name, partition_index=last)
            break
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(entries), next_cursor=next_cursor)
