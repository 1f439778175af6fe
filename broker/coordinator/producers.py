"""Idempotent producers: producer ids, and the sequence rules checked against a partition's producer state.

Per (producer id, partition) the partition's log remembers the epoch and the last five batches (first/last
sequence and offsets) in broker/storage/producer_state.py, the one store (Kafka keeps a
ProducerStateManager per log too): a batch equal to one of them is a retry and is acknowledged with its
original offsets without a second append; any other batch must continue the sequence exactly, or it is
rejected with OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka's `ProducerAppendInfo.checkSequence`).

Producer ids of a single node come in blocks whose end is written to `<data dir>/producer-id-block`
before any id of the block is handed out (as Kafka's controller allocates blocks), so no id is ever
reused; ids found in the logs at start-up are never handed out again either (`seen`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError
from broker.protocol.records import BatchHeader
from broker.storage.producer_state import UNKNOWN_SEQUENCE, BatchMetadata, ProducerStateTable

_SEQUENCE_MODULUS = 1 << 31
_BLOCK_SIZE = 1000


class ProducerIdAllocator:
    """A single node's producer ids (a cluster member gets blocks from the controller instead)."""

    def __init__(self, block_file: Path | None = None, first_producer_id: int = 1000) -> None:
        self._block_file = block_file
        start = first_producer_id
        if block_file is not None and block_file.exists():
            start = max(start, int(block_file.read_text(encoding="utf-8").strip() or 0))
        self._next_id = self._block_end = start

    def init_producer_id(self) -> tuple[int, int]:
        """A new producer id at epoch 0. As in Kafka, an idempotent (non-transactional) producer asking
        to bump its epoch (KIP-360) also gets a fresh id: its old sequences cannot clash with it."""
        if self._next_id >= self._block_end:
            self._reserve_block()
        producer_id = self._next_id
        self._next_id += 1
        return producer_id, 0

    def _reserve_block(self) -> None:
        end = self._next_id + _BLOCK_SIZE
        if self._block_file is not None:
            temporary = self._block_file.with_suffix(".tmp")
            with temporary.open("w", encoding="utf-8") as handle:
                handle.write(f"{end}\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self._block_file)
        self._block_end = end

    def seen(self, producer_ids: Iterable[int]) -> None:
        """Producer ids a log holds: never handed out again."""
        self._next_id = max(self._next_id, max(producer_ids, default=-1) + 1)


def check(table: ProducerStateTable, topic: str, partition: int, batch: BatchHeader) -> BatchMetadata | None:
    """Validate a batch before its append against the partition's producer state. Returns the original
    metadata when the batch is a retry of one already appended (a duplicate). Markers (control batches) carry
    no sequence and are never checked here: only the transaction coordinator writes them."""
    if batch.producer_id < 0 or batch.is_control:
        return None
    entry = table.entries.get(batch.producer_id)
    if entry is not None and entry.current_txn_first_offset >= 0 and not batch.is_transactional:
        raise KafkaApiError(  # Kafka's ProducerAppendInfo.appendDataBatch
            ErrorCode.invalid_txn_state,
            f"producer {batch.producer_id} sent a non-transactional batch to {topic}-{partition} while its"
            f" transaction from offset {entry.current_txn_first_offset} is open",
        )
    if entry is None or batch.producer_epoch > entry.epoch:
        if batch.base_sequence != 0 and entry is not None:
            raise KafkaApiError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {batch.producer_id} new epoch {batch.producer_epoch} must start at sequence 0,"
                f" got {batch.base_sequence}",
            )
        return None
    if batch.producer_epoch < entry.epoch:
        raise KafkaApiError(
            ErrorCode.invalid_producer_epoch,
            f"producer {batch.producer_id} epoch {batch.producer_epoch} is older than {entry.epoch}",
        )
    for cached in table.batches(batch.producer_id):
        if cached.last_sequence != batch.last_sequence:
            continue
        if cached.first_sequence == batch.base_sequence:
            return cached
        if cached.first_sequence == UNKNOWN_SEQUENCE:  # restored: only the last batch's end is known
            base = cached.last_offset - batch.last_offset_delta
            return BatchMetadata(batch.base_sequence, batch.last_sequence, base, cached.last_offset)
    expected = (entry.last_sequence + 1) % _SEQUENCE_MODULUS
    if batch.base_sequence != expected:
        raise KafkaApiError(
            ErrorCode.out_of_order_sequence_number,
            f"producer {batch.producer_id} sent sequence {batch.base_sequence} on {topic}-{partition},"
            f" expected {expected}",
        )
    return None
