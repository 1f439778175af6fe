"""The transport-neutral messages the encoders produce and the sinks deliver, one by one or in batches."""

from collections.abc import Sequence
from dataclasses import dataclass

# Per-record overhead of RecordBatch v2 beyond key and value (length, attributes, deltas, counts),
# bounded generously so size checks never under-count.
RECORD_OVERHEAD = 32


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def size(self) -> int:
        """Bytes this message occupies in a record batch (an upper bound)."""
        header_bytes = sum(len(name) + len(value) + 10 for name, value in self.headers) if self.headers else 0
        return len(self.key or b"") + len(self.value) + header_bytes + RECORD_OVERHEAD


@dataclass(frozen=True, slots=True)
class MessageBatch:
    """Messages sent in this order and acknowledged as one unit (one callback for all of them), so the
    per-message Python work of the delivery path is only the encoding. `size` (their summed
    `Message.size`, for the in-flight memory quota) and `largest` (for the message limit) are computed
    once, when the batch is built."""

    messages: Sequence[Message]
    size: int
    largest: int

    @staticmethod
    def of(messages: Sequence[Message]) -> "MessageBatch":
        sizes = [m.size for m in messages]
        return MessageBatch(messages, sum(sizes), max(sizes, default=0))
