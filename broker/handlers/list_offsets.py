"""ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3), or first offset at/after a time."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def _lookup(state: BrokerState, topic_name: str, partition: int, timestamp: int) -> tuple[int, int]:
    plog = state.partitions.log(state.require_topic(topic_name), partition)
    state.check_leader(topic_name, partition)
    if timestamp == LATEST:
        return -1, state.high_watermark(topic_name, partition, plog)
    if timestamp == EARLIEST:
        return -1, plog.log_start_offset
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp()
        return (found.timestamp, found.offset) if found else (-1, -1)
    if timestamp < 0:
        raise KafkaApiError(ErrorCode.invalid_request, f"timestamp {timestamp} is not a known special value")
    found = plog.offset_for_timestamp(timestamp)
    return (found.timestamp, found.offset) if found else (-1, -1)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    partition_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = []
    for topic in request.body.topics:
        answers = []
        for part in topic.partitions:
            try:
                stamp, offset = _lookup(state, topic.name, part.partition_index, part.timestamp)
                code = ErrorCode.none
            except KafkaApiError as exc:
                stamp, offset, code = -1, -1, exc.code
            answers.append(
                build(partition_cls, partition_index=part.partition_index, error_code=code, timestamp=stamp,
                      offset=offset, leader_epoch=0 if offset >= 0 else -1)
            )
        topics.append(build(nested(cls, "ListOffsetsTopicResponse"), name=topic.name, partitions=tuple(answers)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
