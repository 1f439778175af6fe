"""Library-neutral binlog records: what `binlog_reader` hands to the rest of capture.

Row images stay in the shape the binlog library produces (one dict per row with `values` /
`none_sources`, or `before_values` / `after_values` / ...) so that decoding is not paid twice; the
mounter is the only reader of that shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from changefeed.model import Position, RowKind
from changefeed.source.statement_dml import StatementDML


class FieldType:
    """MySQL column type codes as they appear in TABLE_MAP events (include/field_types.h)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


@dataclass(frozen=True)
class BinlogColumn:
    """A column as the TABLE_MAP event (with binlog_row_metadata=FULL) describes it."""

    name: str
    type_code: int
    unsigned: bool = False
    nullable: bool = True
    primary: bool = False
    charset: str | None = None  # MySQL charset name (utf8mb4, latin1, binary); None for non-strings
    collation: str | None = None
    max_length: int | None = None  # bytes, for char/varchar/binary/varbinary
    length_size: int | None = None  # 1..4, for blob/text/json
    precision: int | None = None
    decimals: int | None = None
    fsp: int | None = None
    bits: int | None = None
    elements: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableMap:
    table_id: int
    schema: str
    table: str
    columns: tuple[BinlogColumn, ...]
    position: Position


@dataclass(frozen=True)
class BeginRecord:
    """Start of an event group: a GTID event, or BEGIN without one. `gtid` is "" when absent."""

    gtid: str
    timestamp: int
    position: Position


@dataclass(frozen=True)
class RowsRecord:
    kind: RowKind
    table_id: int
    schema: str
    table: str
    rows: list[dict[str, Any]]
    timestamp: int
    position: Position


@dataclass(frozen=True)
class QueryRecord:
    """A statement other than BEGIN/COMMIT and DML (DDL, SAVEPOINT, GRANT, ...)."""

    sql: str
    database: str
    timestamp: int
    position: Position
    next_position: Position
    # The Query event's time_zone status variable: the session's zone, written only when the statement
    # used it (e.g. DEFAULT CURRENT_TIMESTAMP on a DATETIME column); "" when absent.
    time_zone: str = ""


@dataclass(frozen=True)
class CommitRecord:
    """End of a transaction (XID or COMMIT); `next_position` is a safe place to resume."""

    timestamp: int
    next_position: Position


@dataclass(frozen=True)
class RotateRecord:
    next_position: Position


@dataclass(frozen=True)
class DMLStatementRecord:
    """DML logged as a statement (binlog_format STATEMENT or MIXED): its rows are not in the binlog."""

    sql: str
    statement: StatementDML
    position: Position  # after the event


@dataclass(frozen=True)
class HeartbeatRecord:
    """The server had nothing to send for the heartbeat period (MySQL manual, MASTER_HEARTBEAT_PERIOD).

    `position` is where the server's binlog ends now, a transaction boundary, when the reader can
    tell (same file, not behind the last event); None otherwise. `timestamp` is this host's clock
    (Unix seconds): a heartbeat event carries none."""

    position: Position | None
    timestamp: float


BinlogRecord = (BeginRecord | TableMap | RowsRecord | QueryRecord | DMLStatementRecord | CommitRecord
                | RotateRecord | HeartbeatRecord)
