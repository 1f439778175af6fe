"""Fetch (1): long polling over every requested partition.

The response is complete (every requested partition, no fetch sessions: session_id 0 tells clients to
send full requests). It is sent once `min_bytes` are available, an error occurs, or `max_wait` passes;
appends wake waiting fetches through the DataNotifier. Each partition returns up to its
`partition_max_bytes` and the whole response up to `max_bytes`, but the first batch always goes out
whole so that a batch bigger than the limits cannot stall a consumer (as in Kafka).

Record data read from segments is not copied here: the response carries a token per partition and the
file ranges go to the server in a `SplicedResponse`, which sends them with sendfile (Kafka's zero-copy
transfer). Only a consumer reading below a follower-lagged high watermark (or an open transaction) gets data
cut in memory.

Isolation (Kafka's FetchIsolation): read_uncommitted consumers read up to the high watermark;
read_committed ones up to the last stable offset (LSO, before the oldest undecided transaction) and get the
aborted transactions overlapping the returned data (producer id, first offset) so they drop those records.
Followers read up to the log end. Every answer carries the LSO.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.handlers._build import NO_THROTTLE, build, has_field, nested
from broker.handlers.context import BrokerState, Request
from broker.log_store import FileRange, materialize
from broker.protocol import records
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.protocol.spliced import Insert, SplicedResponse, new_token
from broker.replication.leader_epochs import diverging_epoch, epoch_cache
from broker.storage.txn_index import AbortedTxn

READ_COMMITTED = 1


def _below(data: bytes, high: int) -> bytes:
    """Only whole batches below the high watermark (or the LSO): consumers never see uncommitted offsets."""
    end = 0
    for header in records.iter_batches(data, verify_crc=False):
        if header.base_offset + header.last_offset_delta >= high:
            break
        end = header.position + header.length
    return data[:end]


def _end_offset(data: bytes) -> int | None:
    """The offset after the last batch of `data` (None when empty)."""
    end = None
    for header in records.iter_batches(data, verify_crc=False):
        end = header.base_offset + header.last_offset_delta + 1
    return end


def replica_id_of(body: Any) -> int:
    """The fetching follower's broker id (v15+ carries it in replica_state), -1 for consumers."""
    state = getattr(body, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(body, "replica_id", -1))


def _diverging(plog: Any, part: Any) -> Any:
    last_epoch = getattr(part, "last_fetched_epoch", -1)
    return diverging_epoch(epoch_cache(plog), plog.log_end_offset, last_epoch, part.fetch_offset)


@dataclass(frozen=True)
class _PartitionRead:
    code: ErrorCode = ErrorCode.none
    chunks: tuple[bytes | FileRange, ...] = ()
    size: int = 0
    high: int = -1
    start: int = -1
    lso: int = -1
    aborted: tuple[AbortedTxn, ...] | None = None  # read_committed consumers only
    diverging: Any = None  # a follower's log diverged: answered at once so it truncates before fetching on


def _read_partition(
    state: BrokerState, topic: Any, part: Any, replica_id: int, budget: int, first_pass: bool, committed: bool
) -> _PartitionRead:
    state.check_leader(topic.name, part.partition, getattr(part, "current_leader_epoch", -1))
    plog = state.partitions.log(topic, part.partition)
    start = plog.log_start_offset
    if replica_id >= 0:  # a follower: only a cluster member has them
        committed = False
        diverging = _diverging(plog, part)
        if diverging is not None:
            high = state.high_watermark(topic.name, part.partition, plog)
            lso = state.partitions.last_stable_offset(plog, high)
            return _PartitionRead(high=high, start=start, lso=lso, diverging=diverging)
        if first_pass and start <= part.fetch_offset <= plog.log_end_offset:
            # Its fetch offset is its log end only once its log agrees with ours (as Kafka's
            # Partition.fetchRecords updates the follower state only without a diverging epoch): crediting a
            # divergent suffix would move the high watermark and the ISR over records it does not have.
            state.role.on_follower_fetch((topic.name, part.partition), replica_id, part.fetch_offset,
                                         int(getattr(part, "log_start_offset", -1)))
    high = state.high_watermark(topic.name, part.partition, plog)
    lso = state.partitions.last_stable_offset(plog, high)
    if not start <= part.fetch_offset <= plog.log_end_offset:
        return _PartitionRead(ErrorCode.offset_out_of_range, high=high, start=start, lso=lso)
    readable = plog.log_end_offset if replica_id >= 0 else lso if committed else high
    none_aborted = () if committed else None
    if part.fetch_offset >= readable:
        return _PartitionRead(high=high, start=start, lso=lso, aborted=none_aborted)
    # Always return at least the first batch so oversized batches still flow.
    result = plog.read(part.fetch_offset, max(min(part.partition_max_bytes, budget), 1))
    chunks, size, upper = result.chunks, result.size, readable
    if readable < plog.log_end_offset:
        data = _below(materialize(result.chunks), readable)
        chunks, size, upper = (data,), len(data), _end_offset(data) or part.fetch_offset
    # Kafka's UnifiedLog.collectAbortedTransactions over the returned range (up to the LSO when the data stays
    # in file ranges: an entry beyond the data only tells the consumer of records it has not got yet).
    aborted = tuple(plog.aborted_transactions(part.fetch_offset, upper)) if committed and size else none_aborted
    return _PartitionRead(chunks=chunks, size=size, high=high, start=start, lso=lso, aborted=aborted)


def _records(read: _PartitionRead, inserts: list[Insert]) -> bytes:
    """The records field: bytes when the data is in memory, else a token the file ranges replace."""
    if all(isinstance(chunk, bytes) for chunk in read.chunks):
        return b"".join(read.chunks)  # type: ignore[arg-type]
    token = new_token()
    inserts.append(Insert(token, read.size, read.chunks))
    return token


def _collect(
    state: BrokerState, body: Any, cls: Any, by_id: bool, replica_id: int, inserts: list[Insert], first_pass: bool
) -> tuple[list[Any], int, bool]:
    partition_cls = nested(cls, "PartitionData")
    topic_cls = nested(cls, "FetchableTopicResponse")
    aborted_cls = nested(cls, "AbortedTransaction")
    committed = getattr(body, "isolation_level", 0) == READ_COMMITTED
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
            try:
                if topic is None:
                    raise KafkaApiError(missing, f"fetch from unknown topic {name or wanted.topic_id}")
                read = _read_partition(state, topic, part, replica_id, budget - total, first_pass, committed)
            except KafkaApiError as exc:
                read = _PartitionRead(code=exc.code)
            errors |= read.code != ErrorCode.none or read.diverging is not None
            total += read.size
            answers.append(
                build(
                    partition_cls,
                    partition_index=part.partition,
                    error_code=read.code,
                    high_watermark=read.high,
                    last_stable_offset=read.lso,
                    log_start_offset=read.start,
                    aborted_transactions=None if read.aborted is None else tuple(
                        aborted_cls(producer_id=i64(a.producer_id), first_offset=i64(a.first_offset))
                        for a in read.aborted),
                    preferred_read_replica=-1,
                    records=_records(read, inserts),
                    **_diverging_field(partition_cls, read.diverging),
                )
            )
        topics.append(
            build(topic_cls, topic=name or "", topic_id=getattr(wanted, "topic_id", None), partitions=tuple(answers))
        )
    return topics, total, errors


def _diverging_field(partition_cls: Any, diverging: Any) -> dict[str, Any]:
    if diverging is None or not has_field(partition_cls, "diverging_epoch"):
        return {}
    module = sys.modules[partition_cls.__module__]
    return {"diverging_epoch": module.EpochEndOffset(epoch=i32(diverging.epoch), end_offset=i64(diverging.end_offset))}


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    by_id = version >= 13
    replica_id = replica_id_of(body)
    deadline = time.monotonic() + body.max_wait.total_seconds()
    first_pass = True  # a follower's fetch offset is its log end when it asked, not at each wake-up
    while True:
        inserts: list[Insert] = []
        topics, total, errors = _collect(state, body, cls, by_id, replica_id, inserts, first_pass)
        first_pass = False
        remaining = deadline - time.monotonic()
        if total >= body.min_bytes or errors or remaining <= 0 or not body.topics:
            break
        await state.notifier.wait(remaining)
    response = build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=0,
                     responses=tuple(topics))
    return SplicedResponse(response, tuple(inserts)) if inserts else response
