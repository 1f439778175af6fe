"""OffsetForLeaderEpoch (23): the end offset of a leader epoch. A single node only ever has epoch 0,
which runs to the log end; in a cluster the leader answers from its leader-epoch cache. Clients use
this to detect truncation after a leader change."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _end(state: BrokerState, topic: str, partition: int, current_epoch: int, epoch: int) -> tuple[int, int]:
    plog = state.partitions.log(state.require_topic(topic), partition)
    return state.role.end_offset_for_epoch((topic, partition), plog, current_epoch, epoch)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    result_cls = nested(cls, "EpochEndOffset")
    topics = []
    for topic in request.body.topics:
        answers = []
        for part in topic.partitions:
            try:
                epoch, end = _end(state, topic.topic, part.partition, part.current_leader_epoch, part.leader_epoch)
                code = ErrorCode.none
            except KafkaApiError as exc:
                epoch, end, code = -1, -1, exc.code
            answers.append(build(result_cls, error_code=code, partition=part.partition, leader_epoch=epoch,
                                 end_offset=end))
        topics.append(build(nested(cls, "OffsetForLeaderTopicResult"), topic=topic.topic, partitions=tuple(answers)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
