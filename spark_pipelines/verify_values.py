"""What `verify` compares: a MySQL table's columns and key, and every value in one canonical form.

Both sides are turned into the same Python values with the exactness of the Spark type the pipeline
chooses (spark_pipelines/schemas.py): integers (and BIT, YEAR) as int, DECIMAL as Decimal, FLOAT
rounded to single precision (Delta holds the float32 3.141590118408203 MySQL stores for 3.14159;
MariaDB's client text has only 6 digits, so it is read as DOUBLE), DOUBLE as float, DATE/DATETIME as
naive date/datetime (zero dates: NULL), TIMESTAMP as microseconds since the epoch (MySQL read in UTC),
TIME as MySQL's text, text types as str and binary types as bytes.
Equal canonical values mean equal values, not merely similar ones.

The key is the primary key, else the first unique index whose columns are all NOT NULL: the handle
key TiCDC uses (https://docs.pingcap.com/tidb/stable/ticdc-overview#best-practices).
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from changefeed.model import TableName
from changefeed.source.server import json_check_columns
from spark_pipelines.errors import SchemaError
from spark_pipelines.schemas import column_type

_INTS = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
_BYTES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_EPOCH = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class SourceColumn:
    name: str
    data_type: str  # information_schema DATA_TYPE: int, decimal, timestamp, ...
    column_type: str  # information_schema COLUMN_TYPE: int(11) unsigned, decimal(12,4), ...
    nullable: bool

    @property
    def kind(self) -> str:
        """How values of this column are made canonical (see the module docstring)."""
        name = self.data_type.lower()
        if name in _INTS:
            return "int"
        if name in ("bit", "decimal", "float", "double", "date", "datetime", "timestamp", "time"):
            return {"decimal": "decimal", "float": "float32", "double": "double"}.get(name, name)
        if name == "json":
            return "json"
        if name in _TEXTS:
            return "text"
        if name in _BYTES:
            return "bytes"
        raise SchemaError(f"column {self.name!r} has type {self.column_type!r}, which verify cannot compare; "
                          "exclude the table from the pipeline config's tables")

    def spark_type(self) -> str:
        """The Spark type the pipeline gives this column (`int`, `decimal(12,4)`, ...)."""
        return str(column_type(self.column_type).spark_type.simpleString())


@dataclass(frozen=True)
class SourceTable:
    database: str
    table: str
    columns: tuple[SourceColumn, ...]
    key: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    def column(self, name: str) -> SourceColumn:
        return next(c for c in self.columns if c.name == name)


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def describe(cursor: Any, database: str, table: str) -> SourceTable:
    """The table's columns in order and its key, from information_schema; SchemaError without a key."""
    cursor.execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS "
                   "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (database, table))
    rows = cursor.fetchall()
    if not rows:
        raise SchemaError(f"table {database}.{table} does not exist in MySQL")
    # MariaDB's JSON is LONGTEXT with a json_valid check: compared as JSON, as MySQL compares JSON values.
    json_columns = json_check_columns(cursor, TableName(database, table))
    columns = tuple(SourceColumn(str(n), "json" if str(n) in json_columns else str(d), str(t), str(null) == "YES")
                    for n, d, t, null in rows)
    cursor.execute("SELECT INDEX_NAME, COLUMN_NAME, NON_UNIQUE FROM information_schema.STATISTICS "
                   "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY INDEX_NAME = 'PRIMARY' DESC, "
                   "INDEX_NAME, SEQ_IN_INDEX", (database, table))
    indexes: dict[str, list[str]] = {}
    for index, column, non_unique in cursor.fetchall():
        if int(non_unique) == 0:
            indexes.setdefault(str(index), []).append(str(column))
    nullable = {c.name for c in columns if c.nullable}
    for names in indexes.values():
        if not nullable & set(names):
            return SourceTable(database, table, columns, tuple(names))
    raise SchemaError(f"table {database}.{table} has no primary key and no unique key of NOT NULL columns, so "
                      "its rows have no identity to compare (the changefeed does not capture it either)")


def mysql_select(column: SourceColumn) -> str:
    """The SELECT expression that reads `column` for `from_mysql` (the session runs in UTC)."""
    if column.kind == "time":
        return f"CAST({q(column.name)} AS CHAR)"  # MySQL's own text, as the changefeed sends it
    if column.kind == "float32":
        # MariaDB's client text for a FLOAT has 6 significant digits (12.5664 for 12.56636); as a DOUBLE
        # the stored single-precision value comes whole.
        return f"CAST({q(column.name)} AS DOUBLE)"
    return q(column.name)


def from_mysql(kind: str, value: Any) -> Any:
    """A value read by pymysql, canonical."""
    if value is None:
        return None
    if kind == "int":
        return int(value)
    if kind == "bit":
        return int.from_bytes(value, "big") if isinstance(value, bytes | bytearray) else int(value)
    if kind == "decimal":
        return Decimal(value).normalize()
    if kind == "float32":
        return float(struct.unpack("f", struct.pack("f", float(value)))[0])
    if kind == "double":
        return float(value)
    if kind in ("date", "datetime", "timestamp"):
        if not isinstance(value, dt.date):
            return None  # a zero date: pymysql gives its text back; the pipeline keeps NULL
        if kind == "timestamp":
            assert isinstance(value, dt.datetime)
            return (value - _EPOCH) // _MICRO
        return value
    if kind == "bytes":
        return bytes(value)
    if kind == "json":
        return canonical_json(value)
    return str(value)


def canonical_json(value: Any) -> str:
    """A JSON document's value as one text: MySQL compares JSON by value (key order, whitespace and escapes
    such as \\u00f1 for ñ do not count); the changefeed sends it normalised as TiCDC does."""
    text = value.decode() if isinstance(value, bytes | bytearray) else str(value)
    return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def spark_select(column: SourceColumn) -> Any:
    """The Spark column that reads `column` from Delta for `from_delta`."""
    from pyspark.sql import functions as F

    if column.kind == "timestamp":
        # collect() would turn a TimestampType into this Python process's local time; micros are exact.
        return F.unix_micros(F.col(q(column.name))).alias(column.name)
    return F.col(q(column.name))


def from_delta(kind: str, value: Any) -> Any:
    """A value collected from Spark, canonical."""
    if value is None:
        return None
    if kind in ("int", "bit", "timestamp"):
        return int(value)
    if kind == "decimal":
        return Decimal(value).normalize()
    if kind in ("float32", "double"):
        return float(value)
    if kind == "bytes":
        return bytes(value)
    if kind in ("date", "datetime"):
        return value
    if kind == "json":
        return canonical_json(value)
    return str(value)
