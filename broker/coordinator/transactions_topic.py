"""Transaction state kept in the internal compacted topic `__transaction_state`, as Kafka keeps it.

Each change of a transactional id appends one record (key: the id) to partition
`abs(javaHashCode(transactional id)) % transaction.state.log.num.partitions`; the coordinator of an id is
the leader of that partition. On start, and on a follower as batches arrive, the records are replayed
into the `TransactionCoordinator`, so a coordinator that takes over finishes prepared transactions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kio.records.readers import read_batch

from broker.coordinator.offsets_topic import encode_records, read_batches
from broker.coordinator.transactions_codec import (
    TransactionRecordError,
    TxnLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from broker.log_store import PartitionLog

TRANSACTIONS_TOPIC = "__transaction_state"
# Kafka's transaction.state.log.segment.bytes default (100 MiB), compacted like __consumer_offsets.
TRANSACTIONS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}

log = logging.getLogger("broker.transactions")

Load = Callable[[str, TxnLogValue | None], None]


def encode_batch(transactional_id: str, value: TxnLogValue | None, now_ms: int) -> bytes:
    return encode_records([(encode_key(transactional_id), None if value is None else encode_value(value))], now_ms)


def replay(plog: PartitionLog, load: Load) -> int:
    """Feed every record of one partition to `load`, in log order; returns how many were applied."""
    return sum(apply_batch(data, load) for data in read_batches(plog))


def apply_batch(data: bytes, load: Load) -> int:
    """Feed the records of one batch to `load` (replay, or a follower keeping the state warm). Unreadable
    records are skipped with a log line: one bad record must not stop a broker from starting."""
    try:
        batch, _ = read_batch(data, 0)
    except ValueError as exc:
        log.warning("skipping an unreadable %s batch: %s", TRANSACTIONS_TOPIC, exc)
        return 0
    applied = 0
    for record in batch.records:
        if record.key is None:
            continue
        try:
            transactional_id = decode_key(record.key)
            load(transactional_id, None if record.value is None else decode_value(record.value))
        except TransactionRecordError as exc:
            log.warning("skipping unreadable %s record at offset %d: %s", TRANSACTIONS_TOPIC, record.offset, exc)
            continue
        applied += 1
    return applied
