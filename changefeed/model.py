"""The typed values that flow out of capture: table schemas, row changes, DDL events, positions.

All are frozen dataclasses. Row values are exact Python values, never strings that need re-parsing:

    integer types, bit, year -> int          decimal -> Decimal        float/double -> float
    char/varchar/text/enum   -> str          set -> str ("a,c", in definition order)
    binary/varbinary/blob    -> bytes        json -> str (JSON text)
    date -> date    datetime -> naive datetime    timestamp -> datetime in UTC (tzinfo=UTC)
    time -> timedelta (may be negative)      NULL -> None
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

Value = int | float | Decimal | str | bytes | datetime.datetime | datetime.date | datetime.timedelta | None
Row = Mapping[str, Value]

TSO_LOGICAL_BITS = 18


def compose_tso(physical_ms: int, logical: int) -> int:
    return (physical_ms << TSO_LOGICAL_BITS) | logical


def tso_physical_ms(tso: int) -> int:
    return tso >> TSO_LOGICAL_BITS


def tso_logical(tso: int) -> int:
    return tso & ((1 << TSO_LOGICAL_BITS) - 1)


@dataclass(frozen=True, order=True)
class TableName:
    schema: str
    table: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"


@dataclass(frozen=True)
class Column:
    """One column as MySQL declares it.

    `mysql_type` is the declared type without integer display widths, as canal-JSON's `mysqlType`
    wants it: `int unsigned`, `varchar(40)`, `decimal(10,2)`, `enum('a','b')`, `datetime(6)`, `json`.
    `data_type` is the bare name (`int`, `varchar`, `json`, ...). `charset` is `binary` for
    binary strings and blobs, None for non-string types. `column_type` is the server's own
    information_schema COLUMN_TYPE, verbatim (MariaDB and MySQL 5.7 keep integer display widths:
    `int(11)`, `bigint(20) unsigned zerofill`; MySQL 8.0.19+ drops them), "" when only the binlog
    described the column. `virtual` marks a VIRTUAL generated column (TiCDC leaves those out of its
    messages; STORED ones stay).
    """

    name: str
    data_type: str
    mysql_type: str
    unsigned: bool = False
    nullable: bool = True
    charset: str | None = None
    collation: str | None = None
    length: int | None = None  # characters for strings, bytes for binary, bits for bit
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    elements: tuple[str, ...] = ()  # enum or set members in definition order
    column_type: str = ""
    zerofill: bool = False
    virtual: bool = False

    @property
    def is_binary(self) -> bool:
        return self.charset == "binary"


@dataclass(frozen=True)
class TableSchema:
    schema: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[tuple[str, ...], ...] = ()  # unique indexes other than the primary key

    @property
    def name(self) -> TableName:
        return TableName(self.schema, self.table)

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"{self.schema}.{self.table} has no column {name!r}")

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def handle_key(self) -> tuple[str, ...]:
        """Columns that identify a row: the primary key, else the first unique key on NOT NULL columns."""
        if self.primary_key:
            return self.primary_key
        not_null = {c.name for c in self.columns if not c.nullable}
        for key in self.unique_keys:
            if all(name in not_null for name in key):
                return key
        return ()


@dataclass(frozen=True, order=True)
class Position:
    """A point in the binlog. `file`/`pos` address the next event to read; `gtid` is the server's
    GTID state there (MariaDB `domain-server-seq[,...]`, MySQL `uuid:1-5[,...]`), "" when unknown."""

    file: str
    pos: int
    gtid: str = field(default="", compare=False)

    @property
    def file_index(self) -> int:
        suffix = self.file.rsplit(".", 1)[-1]
        return int(suffix) if suffix.isdigit() else 0

    @property
    def sort_key(self) -> tuple[int, int]:
        return (self.file_index, self.pos)

    def __str__(self) -> str:
        gtid = f" gtid={self.gtid}" if self.gtid else ""
        return f"{self.file}:{self.pos}{gtid}"


class RowKind(enum.Enum):
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


@dataclass(frozen=True)
class RowChange:
    """One changed row. `before` is set for UPDATE and DELETE, `after` for INSERT and UPDATE.

    `position` is where the row's binlog event starts; `ordinal` counts rows within the transaction
    from 0. Snapshot rows are INSERTs with `snapshot=True` and the snapshot's commit_ts.
    """

    kind: RowKind
    table: TableSchema
    before: Row | None
    after: Row | None
    commit_ts: int
    position: Position
    ordinal: int
    snapshot: bool = False

    @property
    def row(self) -> Row:
        """The row image that identifies the key: the new one, or the old one for DELETE."""
        image = self.after if self.after is not None else self.before
        assert image is not None
        return image


class DDLKind(enum.Enum):
    CREATE_DATABASE = "CREATE_DATABASE"
    DROP_DATABASE = "DROP_DATABASE"
    ALTER_DATABASE = "ALTER_DATABASE"
    CREATE_TABLE = "CREATE_TABLE"
    DROP_TABLE = "DROP_TABLE"
    TRUNCATE_TABLE = "TRUNCATE_TABLE"
    RENAME_TABLE = "RENAME_TABLE"
    ALTER_TABLE = "ALTER_TABLE"
    CREATE_INDEX = "CREATE_INDEX"
    DROP_INDEX = "DROP_INDEX"
    OTHER = "OTHER"


@dataclass(frozen=True)
class DDLEvent:
    """A schema change. `tables` are the tables it touches (for RENAME: old then new names);
    `schemas` maps each surviving touched table to its schema right after the statement."""

    sql: str
    kind: DDLKind
    database: str
    tables: tuple[TableName, ...]
    commit_ts: int
    position: Position
    schemas: tuple[TableSchema, ...] = ()
    # The session's time zone when the statement used it (binlog Query event), else "": MySQL evaluates
    # DEFAULT CURRENT_TIMESTAMP of a DATETIME column, and TIMESTAMP literals, in it.
    time_zone: str = ""


@dataclass(frozen=True)
class TransactionCommit:
    """End of a transaction (or DDL, or snapshot): everything before it is complete.

    Acknowledging it means: resume from `checkpoint` and nothing is lost.
    """

    checkpoint: Checkpoint
    rows: int


@dataclass(frozen=True)
class Checkpoint:
    """Where to resume: `position` is the next event after a transaction boundary; `commit_ts` is
    the last commit timestamp issued, so timestamps after resuming keep increasing."""

    position: Position
    commit_ts: int


CaptureEvent = RowChange | DDLEvent | TransactionCommit
