"""The encoder interface: one change in, the bytes of one message out (key and value)."""

from dataclasses import dataclass
from typing import Protocol

from changefeed.model import DDLEvent, RowChange


@dataclass(frozen=True, slots=True)
class Encoded:
    """One encoded message before routing; `size` lets the batcher check limits without re-encoding."""

    key: bytes | None
    value: bytes

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value)


class Encoder(Protocol):
    def encode_row(self, change: RowChange) -> Encoded: ...

    def encode_ddl(self, event: DDLEvent, table: str) -> Encoded: ...

    def encode_watermark(self, watermark_ts: int) -> Encoded: ...
