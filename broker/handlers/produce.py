"""Produce (0): validate RecordBatch v2 data, check idempotent sequences, append, acknowledge.

acks=0 gets no response at all; on a single node acks=1 and acks=all are both satisfied by the local
append, which is also the high watermark. In a cluster only the leader appends (stamping its leader
epoch), and acks=all waits until every in-sync replica has the data (or the request times out).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import i64

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError, named_error
from broker.protocol.framing import RawResponse
from broker.protocol.legacy_produce import LegacyProduceRequest, encode_error_response
from broker.replication.errors import ReplicationError
from broker.topics import Topic, validate_name

log = logging.getLogger("broker.produce")


def _append(state: BrokerState, topic: Topic, partition: int, data: bytes | None) -> tuple[int, int, int, int]:
    """(base offset, log append time, log start offset, end offset) of the appended (or duplicate) data."""
    limit = int(state.topic_config(topic, "max.message.bytes"))
    done = state.partitions.append_as_leader(topic, partition, data, limit)
    return done.base_offset, done.log_append_time, done.log_start_offset, done.end_offset


def _check_in_sync_replicas(state: BrokerState, topic: Topic, partition: int) -> None:
    state.role.check_min_insync(topic, partition, int(state.topic_config(topic, "min.insync.replicas")))


def _refuse_legacy(request: Request) -> RawResponse | None:
    body: LegacyProduceRequest = request.body
    version = request.header.api_version
    log.warning(
        "produce v%d from client %r refused with UNSUPPORTED_VERSION: only Produce v3+ (RecordBatch v2) is served;"
        " upgrade the client", version, request.header.client_id,
    )
    if body.acks == 0:
        return None
    return RawResponse(encode_error_response(version, body, ErrorCode.unsupported_version))


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    if isinstance(body, LegacyProduceRequest):
        return _refuse_legacy(request)
    cls = response_class(request.header.api_key, request.header.api_version)
    partition_cls = nested(cls, "PartitionProduceResponse")
    acks = body.acks
    topics = []
    waits: list[tuple[dict[str, Any], Awaitable[None]]] = []
    for topic_data in body.topic_data:
        answers = []
        topic: Topic | None = None
        topic_error: KafkaApiError | None = None
        try:
            validate_name(topic_data.name)
            topic = state.topics.get(topic_data.name)
            if topic is None:
                created = state.auto_create(topic_data.name)
                topic = created if isinstance(created, Topic) else None
            if topic is None:
                raise KafkaApiError(ErrorCode.unknown_topic_or_partition, f"topic {topic_data.name!r} does not exist")
        except KafkaApiError as exc:
            topic_error = exc
        for partition_data in topic_data.partition_data:
            base_offset, append_time, start = -1, -1, -1
            try:
                if acks not in (0, 1, -1):
                    raise KafkaApiError(ErrorCode.invalid_required_acks, f"acks={acks}: use 0, 1 or -1 (all)")
                if topic_error is not None:
                    raise topic_error
                assert topic is not None
                if acks == -1:
                    _check_in_sync_replicas(state, topic, partition_data.index)
                base_offset, append_time, start, end = _append(
                    state, topic, partition_data.index, partition_data.records
                )
                error, message = ErrorCode.none, None
            except KafkaApiError as exc:
                error, message, end = exc.code, str(exc), -1
                log.warning("produce %s-%s rejected: %s", topic_data.name, partition_data.index, message)
            answer = dict(
                index=partition_data.index, error_code=error, base_offset=base_offset,
                log_append_time=tz_aware_from_i64(i64(append_time)) if append_time >= 0 else None,
                log_start_offset=start, record_errors=(), error_message=message,
            )
            answers.append(answer)
            if acks == -1 and error == ErrorCode.none and topic is not None:
                timeout_ms = int(body.timeout.total_seconds() * 1000)
                waits.append((answer, state.role.wait_for_isr((topic.name, partition_data.index), end, timeout_ms)))
        topics.append((topic_data.name, answers))
    state.notifier.notify()
    if waits:
        await _await_replication(waits)
    if acks == 0:
        return None
    return build(cls, throttle_time=NO_THROTTLE, responses=tuple(
        build(nested(cls, "TopicProduceResponse"), name=name,
              partition_responses=tuple(build(partition_cls, **answer) for answer in answers))
        for name, answers in topics
    ))


async def _await_replication(waits: list[tuple[dict[str, Any], Awaitable[None]]]) -> None:
    """acks=all: wait for the ISR; a partition that does not get there answers with why."""
    for answer, future in waits:
        try:
            await future
        except ReplicationError as exc:
            error = named_error(exc.kafka_error, str(exc))
            answer.update(error_code=error.code, error_message=str(error), base_offset=-1)
        except TimeoutError:
            answer.update(error_code=ErrorCode.request_timed_out, base_offset=-1,
                          error_message="acks=all: the in-sync replicas did not confirm within the request timeout")
