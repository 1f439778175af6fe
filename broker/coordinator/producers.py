"""Producer ids, epochs and per-partition sequence numbers for idempotent producers.

Per (producer id, topic, partition) the broker remembers the epoch and the last five batches
(first/last sequence and offsets), like Kafka's ProducerStateEntry: a batch equal to one of them is a
retry and is acknowledged with its original offsets without a second append; any other batch must
continue the sequence exactly, or it is rejected with OUT_OF_ORDER_SEQUENCE_NUMBER.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError
from broker.protocol.records import BatchHeader

_MAX_CACHED_BATCHES = 5
_SEQUENCE_MODULUS = 1 << 31


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
    def __init__(self, first_producer_id: int = 1000) -> None:
        self._next_id = first_producer_id
        self._epochs: dict[int, int] = {}
        self._entries: dict[tuple[int, str, int], _Entry] = {}

    def init_producer_id(self, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
        """A new producer id at epoch 0, or (KIP-360) the given id with its epoch bumped."""
        if producer_id >= 0:
            current = self._epochs.get(producer_id)
            if current is None or current != epoch:
                raise KafkaApiError(
                    ErrorCode.invalid_producer_epoch,
                    f"producer {producer_id} epoch {epoch} is not the current epoch {current}",
                )
            self._epochs[producer_id] = epoch + 1
            return producer_id, epoch + 1
        producer_id = self._next_id
        self._next_id += 1
        self._epochs[producer_id] = 0
        return producer_id, 0

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
            if cached.first_sequence == batch.base_sequence and cached.last_sequence == batch.last_sequence:
                return cached
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
        self._epochs[batch.producer_id] = max(self._epochs.get(batch.producer_id, 0), batch.producer_epoch)
