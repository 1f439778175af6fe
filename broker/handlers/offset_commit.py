"""OffsetCommit (8): store committed offsets after checking the member's generation."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.offsets import CommittedOffset
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    try:
        state.groups.validate_commit(body.group_id, body.generation_id_or_member_epoch, body.member_id)
        group_error = ErrorCode.none
    except KafkaApiError as exc:
        group_error = exc.code
    partition_cls = nested(cls, "OffsetCommitResponsePartition")
    topics = []
    for topic in body.topics:
        known = state.topics.get(topic.name)
        answers = []
        for part in topic.partitions:
            code = group_error
            if code is ErrorCode.none and (known is None or not 0 <= part.partition_index < known.partitions):
                code = ErrorCode.unknown_topic_or_partition
            if code is ErrorCode.none:
                value = CommittedOffset(
                    part.committed_offset, getattr(part, "committed_leader_epoch", -1), part.committed_metadata
                )
                state.offsets.commit(body.group_id, topic.name, part.partition_index, value)
            answers.append(build(partition_cls, partition_index=part.partition_index, error_code=code))
        topics.append(build(nested(cls, "OffsetCommitResponseTopic"), name=topic.name, partitions=tuple(answers)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
