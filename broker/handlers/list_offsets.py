"""ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3), or first offset at/after a time.

With isolation_level read_committed (v2+) the latest offset is the last stable offset, and a timestamp lookup
finds nothing at or past it (Kafka's Partition.fetchOffsetForTimestamp: the last fetchable offset).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
READ_COMMITTED = 1


def _lookup(state: BrokerState, topic_name: str, partition: int, timestamp: int, committed: bool) -> tuple[int, int]:
    plog = state.partitions.log(state.require_topic(topic_name), partition)
    state.check_leader(topic_name, partition)
    high = state.high_watermark(topic_name, partition, plog)
    if timestamp == LATEST:
        return -1, state.partitions.last_stable_offset(plog, high) if committed else high
    if committed and timestamp >= 0:
        found = plog.offset_for_timestamp(timestamp)
        stable = found is not None and found.offset < state.partitions.last_stable_offset(plog, high)
        return (found.timestamp, found.offset) if found and stable else (-1, -1)
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
    committed = getattr(request.body, "isolation_level", 0) == READ_COMMITTED
    topics = []
    for topic in request.body.topics:
        answers = []
        for part in topic.partitions:
            try:
                stamp, offset = _lookup(state, topic.name, part.partition_index, part.timestamp, committed)
                code = ErrorCode.none
            except KafkaApiError as exc:
                stamp, offset, code = -1, -1, exc.code
            answers.append(
                build(partition_cls, partition_index=part.partition_index, error_code=code, timestamp=stamp,
                      offset=offset, leader_epoch=0 if offset >= 0 else -1)
            )
        topics.append(build(nested(cls, "ListOffsetsTopicResponse"), name=topic.name, partitions=tuple(answers)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
