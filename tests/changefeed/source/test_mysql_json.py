"""MySQL binary JSON in row events, decoded by python-mysql-replication 1.0.17 plus our fixes
(binlog_reader._json_opaque, mounter.mysql_json_text), gives the text MySQL prints for the column; and
MariaDB's JSON (text in a LONGTEXT) passes unchanged, so both reach canal-JSON as the same string.

The documents are built by hand from the format MySQL documents in sql-common/json_binary.h:

    doc          ::= type value
    type         ::= 0x00 small object | 0x01 large object | 0x02 small array | 0x03 large array
                   | 0x04 literal | 0x05 int16 | 0x06 uint16 | 0x07 int32 | 0x08 uint32 | 0x09 int64
                   | 0x0a uint64 | 0x0b double | 0x0c utf8mb4 string | 0x0f custom data
    object       ::= element-count size key-entry* value-entry* key* value*
    array        ::= element-count size value-entry* value*
    key-entry    ::= key-offset key-length(uint16)
    value-entry  ::= type offset-or-inlined-value
    literal      ::= 0x00 null | 0x01 true | 0x02 false
    string       ::= data-length utf8mb4-data
    custom-data  ::= custom-type(uint8, enum_field_types) data-length binary-data
    data-length  ::= 7 bits per byte, high bit set when another byte follows

Counts, sizes and offsets are uint16 in small and uint32 in large containers; offsets count from the
start of the container's value. Literals and (u)int16 are inlined in the value entry, (u)int32 too in
large containers. Keys are stored sorted by length, then bytes.
"""

import io
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from pymysqlreplication.packet import BinLogPacketWrapper

import changefeed.source.binlog_reader  # noqa: F401  (installs the JSON fixes into the library)
from changefeed.codec.values import value_text
from changefeed.model import Column, Position, RowKind, TableSchema
from changefeed.source.mounter import RowMounter, mysql_json_text
from changefeed.source.records import BinlogColumn, FieldType

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY, LITERAL = 0x00, 0x01, 0x02, 0x03, 0x04
INT16, UINT16, INT32, UINT32, INT64, UINT64 = 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A
DOUBLE, STRING, CUSTOM = 0x0B, 0x0C, 0x0F


@dataclass(frozen=True)
class Typed:
    """A scalar with the binary type to store it as."""

    type: int
    value: Any


def var_length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def custom(field_type: int, data: bytes) -> Typed:
    return Typed(CUSTOM, bytes([field_type]) + var_length(len(data)) + data)


def packed_datetime(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, micros: int = 0) -> bytes:
    ymd = ((y * 13 + mo) << 5) | d
    hms = (h << 12) | (mi << 6) | s
    return struct.pack("<q", (((ymd << 17) | hms) << 24) + micros)


def packed_time(h: int, mi: int, s: int, micros: int = 0, negative: bool = False) -> bytes:
    value = ((((h << 12) | (mi << 6) | s)) << 24) + micros
    return struct.pack("<q", -value if negative else value)


_FIXED = {INT16: "<h", UINT16: "<H", INT32: "<i", UINT32: "<I", INT64: "<q", UINT64: "<Q", DOUBLE: "<d"}


def scalar(item: Typed) -> bytes:
    if item.type == LITERAL:
        return bytes([{None: 0, True: 1, False: 2}[item.value]])
    if item.type in _FIXED:
        return struct.pack(_FIXED[item.type], item.value)
    if item.type == STRING:
        data = item.value.encode()
        return var_length(len(data)) + data
    assert item.type == CUSTOM
    return bytes(item.value)


def typed(value: Any) -> Typed:
    if isinstance(value, Typed):
        return value
    if value is None or isinstance(value, bool):
        return Typed(LITERAL, value)
    if isinstance(value, int):
        return Typed(INT16 if -(2**15) <= value < 2**15 else INT64, value)
    if isinstance(value, float):
        return Typed(DOUBLE, value)
    if isinstance(value, str):
        return Typed(STRING, value)
    raise TypeError(value)


def encode(value: Any, large: bool = False) -> tuple[int, bytes]:
    """(type, value bytes) of a Python value: dicts and lists as containers, the rest as `typed`."""
    if isinstance(value, dict):
        return (LARGE_OBJECT if large else SMALL_OBJECT), container(value, large)
    if isinstance(value, list):
        return (LARGE_ARRAY if large else SMALL_ARRAY), container(value, large)
    item = typed(value)
    return item.type, scalar(item)


def container(value: dict[str, Any] | list[Any], large: bool) -> bytes:
    word = "<I" if large else "<H"
    size_of = 4 if large else 2
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        values = [value[k] for k in keys]
    else:
        keys, values = [], value
    header = 2 * size_of + len(keys) * (size_of + 2) + len(values) * (1 + size_of)
    key_bytes = b"".join(k.encode() for k in keys)
    offset = header + len(key_bytes)
    key_entries, value_entries, value_bytes = b"", b"", b""
    key_offset = header
    for k in keys:
        key_entries += struct.pack(word, key_offset) + struct.pack("<H", len(k.encode()))
        key_offset += len(k.encode())
    for v in values:
        vtype, data = encode(v, large) if isinstance(v, (dict, list)) else encode(v)
        inline = vtype in (LITERAL, INT16, UINT16) or (large and vtype in (INT32, UINT32))
        if inline:
            value_entries += bytes([vtype]) + data.ljust(size_of, b"\x00")
        else:
            value_entries += bytes([vtype]) + struct.pack(word, offset + len(value_bytes))
            value_bytes += data
    body = key_entries + value_entries + key_bytes + value_bytes
    total = 2 * size_of + len(body)
    return struct.pack(word, len(values)) + struct.pack(word, total) + body


class ColumnBytes:
    """The two reads BinLogPacketWrapper.read_binary_json makes on a row event's packet."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def read(self, n: int) -> bytes:
        return self._data.read(n)

    def read_uint_by_size(self, size: int) -> int:
        return int.from_bytes(self._data.read(size), "little")


def column_value(document: bytes) -> Any:
    """A JSON column's value in a row event: a 4-byte length (the column's length_size), the document."""
    return BinLogPacketWrapper.read_binary_json(ColumnBytes(struct.pack("<I", len(document)) + document), 4, False)


def decode(value: Any, large: bool = False) -> str:
    """As the library reads a JSON column of a row event, then the mounter's text."""
    vtype, data = encode(value, large)
    return mysql_json_text(column_value(bytes([vtype]) + data))


def test_nested_small_object_in_mysql_key_order() -> None:
    document = {"ccc": {"d": 1.5}, "bb": [True, False, None, -2, 70000, "x"], "a": 1}
    # MySQL sorts keys by length: the text shows a, bb, ccc whatever the insert order was.
    assert decode(document) == '{"a": 1, "bb": [true, false, null, -2, 70000, "x"], "ccc": {"d": 1.5}}'


def test_large_containers_with_inlined_int32_and_literals() -> None:
    document = {"k": [Typed(INT32, -100000), Typed(UINT32, 4000000000), True, None, "s" * 300],
                "n": Typed(UINT64, 2**64 - 1)}
    expected = '{"k": [-100000, 4000000000, true, null, "' + "s" * 300 + '"], "n": 18446744073709551615}'
    assert decode(document, large=True) == expected


@pytest.mark.parametrize(("value", "text"), [
    ("quote \" back \\ tab \t é €", '"quote \\" back \\\\ tab \\t é €"'),
    (Typed(DOUBLE, 1.0), "1.0"),
    (Typed(DOUBLE, 1e20), "1e20"),
    (Typed(DOUBLE, -1.5e-7), "-1.5e-7"),
    (Typed(INT64, -(2**63)), "-9223372036854775808"),
    (None, "null"),
    ([], "[]"),
    ({}, "{}"),
])
def test_top_level_scalars(value: Any, text: str) -> None:
    assert decode(value) == text


@pytest.mark.parametrize(("value", "text"), [
    # DECIMAL 12.50 (precision 4, scale 2): one byte per two digits, 0x0C (12) then 0x32 (50), the first
    # byte with its sign bit set for a positive number (MySQL decimal2bin)
    (custom(246, bytes([4, 2, 0x8C, 0x32])), "12.50"),
    (custom(12, packed_datetime(2024, 2, 29, 13, 5, 9, 120000)), '"2024-02-29 13:05:09.120000"'),
    (custom(7, packed_datetime(2024, 2, 29, 13, 5, 9)), '"2024-02-29 13:05:09.000000"'),
    (custom(10, packed_datetime(2024, 2, 29)), '"2024-02-29"'),
    (custom(11, packed_time(100, 2, 3, 5)), '"100:02:03.000005"'),
    (custom(11, packed_time(1, 0, 0, 500000, negative=True)), '"-01:00:00.500000"'),
    (custom(252, b"\x00\xff"), '"base64:type252:AP8="'),
])
def test_custom_scalars_as_mysql_prints_them(value: Typed, text: str) -> None:
    assert decode(value) == text
    assert decode({"v": value}) == '{"v": ' + text + "}"


def test_json_null_is_not_sql_null() -> None:
    """The JSON null literal and an empty document (MySQL reads it as null) stay JSON text "null"
    through the row mounter; only a NULL column is None."""
    schema = TableSchema("s", "t", (Column("id", "int", "int"), Column("doc", "json", "json")), ("id",))
    binlog = (BinlogColumn("id", FieldType.LONG, nullable=False, primary=True),
              BinlogColumn("doc", FieldType.JSON, length_size=4))
    mounter = RowMounter(schema, binlog)
    for document, expected in [(bytes([LITERAL, 0]), "null"), (b"", "null"), (bytes([LITERAL, 1]), "true")]:
        row = mounter.mount(RowKind.INSERT, {"values": {"id": 1, "doc": column_value(document)}}, 1,
                            Position("b.1", 4), 0)
        assert row.after == {"id": 1, "doc": expected}
    row = mounter.mount(RowKind.INSERT, {"values": {"id": 1, "doc": None}}, 1, Position("b.1", 4), 0)
    assert row.after == {"id": 1, "doc": None}


def test_library_decimal_is_printed_with_its_scale() -> None:
    assert mysql_json_text([Decimal("0.10")]) == "[0.10]"


def test_same_canal_text_from_mysql_binary_and_mariadb_text() -> None:
    """MariaDB sends the JSON text it stored; MySQL sends binary JSON. A document written in MySQL's
    normal form is the same canal-JSON value either way."""
    column = Column("doc", "json", "json", nullable=True)
    mariadb = '{"a": 1, "bb": [true, null, "x"]}'
    mysql = decode({"bb": [True, None, "x"], "a": 1})
    assert value_text(column, mysql) == value_text(column, mariadb) == mariadb
