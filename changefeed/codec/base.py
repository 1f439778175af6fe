"""The encoder interface: one change in, the bytes of one message out (key and value)."""

from dataclasses import dataclass
from typing import Protocol

from changefeed.model import DDLEvent, RowChange, TableName


@dataclass(frozen=True, slots=True)
class Encoded:
    """One encoded message before routing; `size` lets the batcher check limits without re-encoding."""

    key: bytes | None
    value: bytes

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value)


@dataclass(frozen=True, slots=True)
class DDLMessage:
    """One message of a DDL event and the table whose topic it goes to (None: the default topic, as
    TiCDC routes database-level DDL: tiflow cdc/sink/dmlsink/mq/dispatcher/event_router.go
    GetTopicForDDL)."""

    route: TableName | None
    encoded: Encoded


class Encoder(Protocol):
    def encode_row(self, change: RowChange) -> Encoded: ...

    def encode_ddl(self, event: DDLEvent) -> list[DDLMessage]: ...

    def encode_watermark(self, watermark_ts: int) -> Encoded: ...
