"""Producer ids, epochs and per-partition sequence numbers for idempotent producers.

Per (producer id, topic, partition) the broker remembers the epoch and the last five batches
(first/last sequence and offsets), like Kafka's ProducerStateEntry: a batch equal to one of them is a
retry and is acknowledged with its original offsets without a second append; any other batch must
continue the sequence exactly, or it is rejected with OUT_OF_ORDER_SEQUENCE_NUMBER.

Across restarts: producer ids come in blocks whose end is written to `<data dir>/producer-id-block`
before any id of the block is handed out (as Kafka's controller allocates blocks), so no id is ever
reused; the per-partition state is restored from the state a persistent log keeps with its data
(`restore`, called when the broker opens a partition). A restored entry knows only the last batch's
last sequence and offset, which is what a retry of that batch and the next sequence check need.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError
from broker.protocol.records import BatchHeader

_MAX_CACHED_BATCHES = 5
_SEQUENCE_MODULUS = 1 << 31
_BLOCK_SIZE = 1000
UNKNOWN_SEQUENCE = -1


class PersistedProducer(Protocol):
    """What a log's producer-state table remembers per producer (broker/storage/producer_state.py)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def last_offset(self) -> int: ...


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass
class _Entry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=_MAX_CACHED_BATCHES))


class ProducerStateManager:
    def __init__(self, block_file: Path | None = None, first_producer_id: int = 1000) -> None:
        self._block_file = block_file
        start = first_producer_id
        if block_file is not None and block_file.exists():
            start = max(start, int(block_file.read_text(encoding="utf-8").strip() or 0))
        self._next_id = self._block_end = start
        self._entries: dict[tuple[int, str, int], _Entry] = {}

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

    def restore(self, topic: str, partition: int, producers: Iterable[PersistedProducer]) -> None:
        """Seed one partition's state from what its log persisted (after a restart or a truncation)."""
        for entry in producers:
            state = _Entry(entry.epoch)
            state.batches.append(BatchMetadata(UNKNOWN_SEQUENCE, entry.last_sequence, UNKNOWN_SEQUENCE,
                                               entry.last_offset))
            self._entries[(entry.producer_id, topic, partition)] = state
            if entry.producer_id >= self._next_id:  # never hand out an id a log already holds
                self._next_id = entry.producer_id + 1

    def forget(self, topic: str, partition: int) -> None:
        """Drop one partition's state, before `restore` after a truncation: producers known only from
        records that are gone must not be remembered. Scans every entry; truncations are rare."""
        for key in [key for key in self._entries if key[1] == topic and key[2] == partition]:
            del self._entries[key]

    def check(self, topic: str, partition: int, batch: BatchHeader) -> BatchMetadata | None:
        """Validate a batch before append. Returns the original metadata when it is a duplicate."""
        if batch.producer_id < 0:
            return None
        entry = self._entries.get((batch.producer_id, topic, partition))
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
        for cached in entry.batches:
            if cached.last_sequence != batch.last_sequence:
                continue
            if cached.first_sequence == batch.base_sequence:
                return cached
            if cached.first_sequence == UNKNOWN_SEQUENCE:  # restored: only the last batch's end is known
                base = cached.last_offset - batch.last_offset_delta
                return BatchMetadata(batch.base_sequence, batch.last_sequence, base, cached.last_offset)
        expected = (entry.batches[-1].last_sequence + 1) % _SEQUENCE_MODULUS if entry.batches else 0
        if batch.base_sequence != expected:
            raise KafkaApiError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {batch.producer_id} sent sequence {batch.base_sequence} on {topic}-{partition},"
                f" expected {expected}",
            )
        return None

    def record(self, topic: str, partition: int, batch: BatchHeader, base_offset: int) -> None:
        if batch.producer_id < 0:
            return
        key = (batch.producer_id, topic, partition)
        entry = self._entries.get(key)
        if entry is None or batch.producer_epoch > entry.epoch:
            entry = self._entries[key] = _Entry(batch.producer_epoch)
        entry.batches.append(
            BatchMetadata(
                batch.base_sequence, batch.last_sequence, base_offset, base_offset + batch.last_offset_delta
            )
        )
