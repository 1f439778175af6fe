"""DeleteRecords (21): move a partition's log start offset forward (-1 means the high watermark).

As in Kafka (DelayedDeleteRecords), a partition is answered once its low watermark, the lowest log start over
the leader and the followers on live brokers, has reached the requested offset: a follower that could lead
next has dropped the records too, so they stay deleted when the leader dies. A partition that does not get
there within the request's timeout answers REQUEST_TIMED_OUT (the leader's log start has moved)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError, named_error
from broker.replication.errors import ReplicationError

HIGH_WATERMARK = -1


def _delete(state: BrokerState, topic_name: str, partition: int, offset: int, timeout_ms: int) -> Awaitable[int]:
    plog = state.partitions.log(state.require_topic(topic_name), partition)
    state.check_leader(topic_name, partition)
    high = state.high_watermark(topic_name, partition, plog)
    if offset == HIGH_WATERMARK:
        offset = high
    if not 0 <= offset <= high:
        raise KafkaApiError(
            ErrorCode.offset_out_of_range,
            f"cannot delete records of {topic_name}-{partition} before {offset}: the high watermark is {high}",
        )
    plog.delete_records_before(offset)
    return state.role.wait_for_low_watermark((topic_name, partition), plog, offset, timeout_ms)


async def _low_watermark(waiting: Awaitable[int]) -> tuple[int, ErrorCode]:
    try:
        return await waiting, ErrorCode.none
    except ReplicationError as exc:
        return -1, named_error(exc.kafka_error, str(exc)).code
    except TimeoutError:
        return -1, ErrorCode.request_timed_out


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    partition_cls = nested(cls, "DeleteRecordsPartitionResult")
    timeout_ms = int(request.body.timeout.total_seconds() * 1000)
    waits: list[tuple[str, int, Awaitable[int] | KafkaApiError]] = []
    for topic in request.body.topics:
        for part in topic.partitions:
            try:
                waits.append((topic.name, part.partition_index,
                              _delete(state, topic.name, part.partition_index, part.offset, timeout_ms)))
            except KafkaApiError as exc:
                waits.append((topic.name, part.partition_index, exc))
    state.notifier.notify()
    answers: dict[str, list[Any]] = {}
    for name, index, waiting in waits:
        low, code = (-1, waiting.code) if isinstance(waiting, KafkaApiError) else await _low_watermark(waiting)
        answers.setdefault(name, []).append(build(partition_cls, partition_index=index, low_watermark=low,
                                                  error_code=code))
    topics = tuple(build(nested(cls, "DeleteRecordsTopicResult"), name=name, partitions=tuple(parts))
                   for name, parts in answers.items())
    return build(cls, throttle_time=NO_THROTTLE, topics=topics)
