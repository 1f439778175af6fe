"""Turn decoded binlog rows (and snapshot rows) into exact model values (pure, no I/O).

The binlog library decodes most types correctly; the mounter fixes what it does not, per column,
with a converter chosen once per table schema so that the common case (no fix) costs nothing:

- BIT arrives as a string of '0'/'1'                      -> int
- SET arrives as a Python set, and the empty set as None   -> "a,c" in definition order, "" for empty
- YEAR 0000 arrives as 1900 (stored byte 0 + 1900)         -> 0
- BINARY(n) arrives with trailing 0x00 bytes stripped      -> padded back to n bytes
- an empty binary string/blob arrives as str ''            -> b''
- TIMESTAMP arrives as a naive datetime in UTC            -> aware datetime in UTC
- JSON (MySQL binary JSON) arrives as Python objects       -> JSON text as MySQL prints it (MariaDB
  stores JSON as text and sends that text, which passes unchanged)

Snapshot rows come from a SELECT through PyMySQL, whose conversions differ again (FLOAT parsed from
its shortest decimal text, BIT as bytes); `SnapshotMounter` maps them to the same values the binlog
gives, so a row read by the snapshot equals the same row read from the binlog.
"""

from __future__ import annotations

import datetime
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from changefeed.model import Column, Position, RowChange, RowKind, TableSchema
from changefeed.source.records import BinlogColumn, FieldType

Converter = Callable[[Any], Any]
_EMPTY_SET = "empty set"  # the library's none_sources marker for an empty SET value
_STRINGS = {FieldType.STRING, FieldType.VARCHAR, FieldType.VAR_STRING, FieldType.BLOB, FieldType.TINY_BLOB,
            FieldType.MEDIUM_BLOB, FieldType.LONG_BLOB}


def _bit_from_text(value: Any) -> Any:
    return int(value, 2) if isinstance(value, str) else value


def _year(value: Any) -> Any:
    return 0 if value == 1900 else value


def _utc(value: Any) -> Any:
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=datetime.UTC)
    return value


@dataclass(frozen=True)
class JsonText:
    """A scalar of MySQL binary JSON already in the text MySQL prints for it (a DECIMAL, a date/time, an
    opaque value), made by binlog_reader where the raw bytes are at hand."""

    text: str


def _json_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value  # MariaDB: the stored text
    return mysql_json_text(value)


def mysql_json_text(value: Any) -> str:
    """A decoded MySQL binary JSON document as the text MySQL itself returns for the column (so the
    binlog gives what the snapshot's SELECT gives): `", "` and `": "` separators, object keys in stored
    order (binary JSON keeps them sorted by length, then bytes), non-ASCII text unescaped, a double
    always with a fraction or exponent (MySQL 8.4 Reference Manual, 13.5 "The JSON Data Type",
    "Normalization, Merging, and Autowrapping of JSON Values")."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, JsonText):
        return value.text
    if isinstance(value, bytes):
        return json.dumps(value.decode("utf-8"), ensure_ascii=False)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{mysql_json_text(k)}: {mysql_json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(mysql_json_text(v) for v in value) + "]"
    raise TypeError(f"unexpected value {value!r} ({type(value).__name__}) in a decoded JSON document")


def _double_text(value: float) -> str:
    # Python's shortest repr, with MySQL's exponent form (1e20, 1.5e-7 where Python says 1e+20, 1.5e-07).
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


def _binary(value: Any) -> Any:
    return value.encode("latin-1") if isinstance(value, str) else value


def _pad_binary(length: int) -> Converter:
    def pad(value: Any) -> Any:
        value = _binary(value)
        if isinstance(value, bytes) and len(value) < length:
            return value + b"\x00" * (length - len(value))
        return value

    return pad


def _set_text(elements: Sequence[str]) -> Converter:
    def join(value: Any) -> Any:
        if isinstance(value, (set, frozenset)):
            return ",".join(e for e in elements if e in value)
        return value

    return join


def _binlog_converter(binlog: BinlogColumn, column: Column) -> Converter | None:
    code = binlog.type_code
    if code == FieldType.BIT:
        return _bit_from_text
    if code == FieldType.SET:
        return _set_text(column.elements or binlog.elements)
    if code == FieldType.YEAR:
        return _year
    if code in (FieldType.TIMESTAMP, FieldType.TIMESTAMP2):
        return _utc
    if code == FieldType.JSON:
        return _json_text
    if binlog.charset == "binary" and code in _STRINGS:
        if code == FieldType.STRING and binlog.max_length:
            return _pad_binary(binlog.max_length)
        return _binary
    return None


class RowMounter:
    """Mounts the rows of one table under one schema version."""

    def __init__(self, schema: TableSchema, binlog_columns: Sequence[BinlogColumn]) -> None:
        self.schema = schema
        self._converters = [
            (b.name, conv)
            for b, c in zip(binlog_columns, schema.columns, strict=True)
            if (conv := _binlog_converter(b, c)) is not None
        ]
        self._sets = [b.name for b in binlog_columns if b.type_code == FieldType.SET]

    def _fix(self, values: dict[str, Any], none_sources: dict[str, str] | None) -> dict[str, Any]:
        for name, convert in self._converters:
            value = values[name]
            if value is not None:
                values[name] = convert(value)
        if self._sets and none_sources:
            for name in self._sets:
                if none_sources.get(name) == _EMPTY_SET:
                    values[name] = ""
        return values

    def mount(
        self, kind: RowKind, raw: dict[str, Any], commit_ts: int, position: Position, ordinal: int
    ) -> RowChange:
        if kind is RowKind.UPDATE:
            before = self._fix(raw["before_values"], raw.get("before_none_sources"))
            after = self._fix(raw["after_values"], raw.get("after_none_sources"))
            return RowChange(kind, self.schema, before, after, commit_ts, position, ordinal)
        values = self._fix(raw["values"], raw.get("none_sources"))
        if kind is RowKind.INSERT:
            return RowChange(kind, self.schema, None, values, commit_ts, position, ordinal)
        return RowChange(kind, self.schema, values, None, commit_ts, position, ordinal)


def _float32(value: Any) -> Any:
    # MySQL FLOAT is single precision; the binlog gives its exact value widened to a double.
    if isinstance(value, float):
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    return value


def _bit_from_bytes(value: Any) -> Any:
    return int.from_bytes(value, "big") if isinstance(value, (bytes, bytearray)) else value


def _json_from_snapshot(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _snapshot_converter(column: Column) -> Converter | None:
    if column.data_type == "float":
        return _float32
    if column.data_type == "bit":
        return _bit_from_bytes
    if column.data_type == "timestamp":
        return _utc
    if column.data_type == "json":
        return _json_from_snapshot
    return None


class SnapshotMounter:
    """Mounts rows read by SELECT (PyMySQL tuples in column order) as snapshot INSERTs."""

    def __init__(self, schema: TableSchema) -> None:
        self.schema = schema
        self._names = schema.column_names
        self._converters = [(i, conv) for i, c in enumerate(schema.columns)
                            if (conv := _snapshot_converter(c)) is not None]

    def mount(self, row: Sequence[Any], commit_ts: int, position: Position, ordinal: int) -> RowChange:
        values = dict(zip(self._names, row, strict=True))
        for index, convert in self._converters:
            name = self._names[index]
            if values[name] is not None:
                values[name] = convert(values[name])
        return RowChange(RowKind.INSERT, self.schema, None, values, commit_ts, position, ordinal,
                         snapshot=True)
