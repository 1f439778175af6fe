"""Produce (0): validate RecordBatch v2 data, check idempotent sequences, append, acknowledge.

acks=0 gets no response at all; on a single node acks=1 and acks=all are both satisfied by the local
append, which is also the high watermark.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import i64

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol import records
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.protocol.framing import RawResponse
from broker.protocol.legacy_produce import LegacyProduceRequest, encode_error_response
from broker.topics import Topic, validate_name

log = logging.getLogger("broker.produce")


def _append(state: BrokerState, topic: Topic, partition: int, data: bytes | None) -> tuple[int, int, int]:
    """(base offset, log append time, log start offset) of the appended (or duplicate) data."""
    plog = state.log(topic, partition)
    if not data:
        raise KafkaApiError(ErrorCode.corrupt_message, "produce request without record data")
    limit = int(state.topic_config(topic, "max.message.bytes"))
    headers = list(records.iter_batches(data))
    for header in headers:
        if header.length > limit:
            raise KafkaApiError(
                ErrorCode.message_too_large,
                f"record batch of {header.length} bytes is over max.message.bytes={limit} of topic {topic.name!r}",
            )
    duplicates = [state.producers.check(topic.name, partition, header) for header in headers]
    if duplicates and all(d is not None for d in duplicates):
        first = duplicates[0]
        assert first is not None
        return first.base_offset, -1, plog.log_start_offset
    result = plog.append(data, leader_epoch=0)
    offset = result.base_offset
    for header in headers:
        state.producers.record(topic.name, partition, header, offset)
        offset += header.last_offset_delta + 1
    return result.base_offset, result.log_append_time, result.log_start_offset


def _check_in_sync_replicas(state: BrokerState, topic: Topic) -> None:
    wanted = int(state.topic_config(topic, "min.insync.replicas"))
    if wanted > 1:
        raise KafkaApiError(
            ErrorCode.not_enough_replicas,
            f"acks=all on {topic.name!r} needs min.insync.replicas={wanted} in-sync replicas; this single-node"
            " broker has 1",
        )


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
    for topic_data in body.topic_data:
        answers = []
        topic: Topic | None = None
        topic_error: KafkaApiError | None = None
        try:
            validate_name(topic_data.name)
            topic = state.topics.get(topic_data.name) or state.auto_create(topic_data.name)
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
                    _check_in_sync_replicas(state, topic)
                base_offset, append_time, start = _append(state, topic, partition_data.index, partition_data.records)
                error, message = ErrorCode.none, None
            except KafkaApiError as exc:
                error, message = exc.code, str(exc)
                log.warning("produce %s-%s rejected: %s", topic_data.name, partition_data.index, message)
            answers.append(
                build(
                    partition_cls,
                    index=partition_data.index,
                    error_code=error,
                    base_offset=base_offset,
                    log_append_time=tz_aware_from_i64(i64(append_time)) if append_time >= 0 else None,
                    log_start_offset=start,
                    record_errors=(),
                    error_message=message,
                )
            )
        topics.append(
            build(nested(cls, "TopicProduceResponse"), name=topic_data.name, partition_responses=tuple(answers))
        )
    state.notifier.notify()
    if acks == 0:
        return None
    return build(cls, responses=tuple(topics), throttle_time=NO_THROTTLE)
