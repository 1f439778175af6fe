"""The transport-neutral message the encoders produce and the sinks deliver."""

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
        header_bytes = sum(len(name) + len(value) + 10 for name, value in self.headers)
        return len(self.key or b"") + len(self.value) + header_bytes + RECORD_OVERHEAD
