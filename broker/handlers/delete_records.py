"""DeleteRecords (21): move a partition's log start offset forward (-1 means the high watermark)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

HIGH_WATERMARK = -1


def _delete(state: BrokerState, topic_name: str, partition: int, offset: int) -> int:
    plog = state.partitions.log(state.require_topic(topic_name), partition)
    state.check_leader(topic_name, partition)
    if offset == HIGH_WATERMARK:
        offset = plog.high_watermark
    if not 0 <= offset <= plog.high_watermark:
        raise KafkaApiError(
            ErrorCode.offset_out_of_range,
            f"cannot delete records of {topic_name}-{partition} before {offset}: the high watermark is"
            f" {plog.high_watermark}",
        )
    return plog.delete_records_before(offset)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    partition_cls = nested(cls, "DeleteRecordsPartitionResult")
    topics = []
    for topic in request.body.topics:
        answers = []
        for part in topic.partitions:
            try:
                low, code = _delete(state, topic.name, part.partition_index, part.offset), ErrorCode.none
            except KafkaApiError as exc:
                low, code = -1, exc.code
            answers.append(build(partition_cls, partition_index=part.partition_index, low_watermark=low,
                                 error_code=code))
        topics.append(build(nested(cls, "DeleteRecordsTopicResult"), name=topic.name, partitions=tuple(answers)))
    state.notifier.notify()
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
