"""Fetch (1): long polling over every requested partition.

The response is complete (every requested partition, no fetch sessions: session_id 0 tells clients to
send full requests). It is sent once `min_bytes` are available, an error occurs, or `max_wait` passes;
appends wake waiting fetches through the DataNotifier. Each partition returns up to its
`partition_max_bytes` and the whole response up to `max_bytes`, but the first batch always goes out
whole so that a batch bigger than the limits cannot stall a consumer (as in Kafka).
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.log_store import FileRange
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _read_chunks(chunks: tuple[bytes | FileRange, ...]) -> bytes:
    parts = []
    for chunk in chunks:
        if isinstance(chunk, FileRange):
            with open(chunk.path, "rb") as file:
                file.seek(chunk.position)
                parts.append(file.read(chunk.size))
        else:
            parts.append(chunk)
    return b"".join(parts)


def _collect(state: BrokerState, body: Any, cls: Any, by_id: bool) -> tuple[list[Any], int, bool]:
    partition_cls = nested(cls, "PartitionData")
    topic_cls = nested(cls, "FetchableTopicResponse")
    budget = body.max_bytes if body.max_bytes > 0 else 0x7FFFFFFF
    total, errors = 0, False
    topics = []
    for wanted in body.topics:
        name = None
        if by_id:
            found = state.topics.by_id(wanted.topic_id)
            name = found.name if found else None
            missing = ErrorCode.unknown_topic_id
        else:
            name = wanted.topic
            missing = ErrorCode.unknown_topic_or_partition
        topic = state.topics.get(name) if name is not None else None
        answers = []
        for part in wanted.partitions:
            code, data, high, start = ErrorCode.none, b"", -1, -1
            try:
                if topic is None:
                    raise KafkaApiError(missing, f"fetch from unknown topic {name or wanted.topic_id}")
                plog = state.log(topic, part.partition)
                high, start = plog.high_watermark, plog.log_start_offset
                if not start <= part.fetch_offset <= plog.log_end_offset:
                    raise KafkaApiError(
                        ErrorCode.offset_out_of_range,
                        f"offset {part.fetch_offset} is outside {start}..{plog.log_end_offset}",
                    )
                if part.fetch_offset < high:
                    limit = min(part.partition_max_bytes, budget - total)
                    # Always return at least the first batch so oversized batches still flow.
                    result = plog.read(part.fetch_offset, max(limit, 1))
                    data = _read_chunks(result.chunks)
                    total += len(data)
            except KafkaApiError as exc:
                code = exc.code
                errors = True
            answers.append(
                build(
                    partition_cls,
                    partition_index=part.partition,
                    error_code=code,
                    high_watermark=high,
                    last_stable_offset=high,
                    log_start_offset=start,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=data,
                )
            )
        topics.append(
            build(topic_cls, topic=name or "", topic_id=getattr(wanted, "topic_id", None), partitions=tuple(answers))
        )
    return topics, total, errors


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    by_id = version >= 13
    deadline = time.monotonic() + body.max_wait.total_seconds()
    while True:
        topics, total, errors = _collect(state, body, cls, by_id)
        remaining = deadline - time.monotonic()
        if total >= body.min_bytes or errors or remaining <= 0 or not body.topics:
            break
        await state.notifier.wait(remaining)
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=0, responses=tuple(topics))
