"""Canal-JSON's per-column facts as TiCDC emits them: value text, java.sql.Types code, mysqlType name.

Every non-NULL value becomes a string. Binary strings map each byte to the ISO-8859-1 character of
the same code; ENUM and SET carry their numeric value (index, bitmask) like TiCDC; BIT its unsigned
integer; unsigned integers promote their java.sql.Types code when the value leaves the signed range.
"""

import datetime
import enum
import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy
import orjson

from changefeed.model import Column, Value

# java.sql.Types codes
TINYINT, SMALLINT, INTEGER, BIGINT, DECIMAL_CODE = -6, 5, 4, -5, 3
REAL, DOUBLE, CHAR, VARCHAR, BIT = 7, 8, 1, 12, -7
DATE, TIME, TIMESTAMP, BLOB, CLOB = 91, 92, 93, 2004, 2005

_INTEGER_CODES = {
    "tinyint": TINYINT,
    "smallint": SMALLINT,
    "mediumint": INTEGER,
    "int": INTEGER,
    "bigint": BIGINT,
}
# Unsigned values above the signed maximum move to the next wider java type (TiCDC's promotion).
_UNSIGNED_PROMOTION = {
    "tinyint": (127, SMALLINT),
    "smallint": (32767, INTEGER),
    "int": (2147483647, BIGINT),
    "bigint": (9223372036854775807, DECIMAL_CODE),
}
_FIXED_CODES = {
    "float": REAL,
    "double": DOUBLE,
    "decimal": DECIMAL_CODE,
    "date": DATE,
    "datetime": TIMESTAMP,
    "timestamp": TIMESTAMP,
    "time": TIME,
    "year": VARCHAR,
    "enum": INTEGER,
    "set": BIT,
    "bit": BIT,
    "json": VARCHAR,
}
_TEXT_TYPES = {"tinytext", "text", "mediumtext", "longtext"}
_BLOB_TYPES = {"tinyblob", "blob", "mediumblob", "longblob", "binary", "varbinary"}
# With the binary charset MySQL's string types are their binary twins (TiDB's TypeToStr does this).
_BINARY_NAMES = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}


def _base_type(column: Column) -> str:
    name = column.data_type.lower()
    if name == "integer":
        return "int"
    if name in ("bool", "boolean"):
        return "tinyint"
    if column.is_binary:
        return _BINARY_NAMES.get(name, name)
    return name


def java_sql_type(column: Column, value: Value) -> int:
    name = _base_type(column)
    if name in _INTEGER_CODES:
        code = _INTEGER_CODES[name]
        promotion = _UNSIGNED_PROMOTION.get(name)
        if column.unsigned and promotion and isinstance(value, int) and value > promotion[0]:
            return promotion[1]
        return code
    if name in _FIXED_CODES:
        return _FIXED_CODES[name]
    if name in _BLOB_TYPES:
        return BLOB
    if name in _TEXT_TYPES:
        return CLOB
    if name == "char":
        return CHAR
    return VARCHAR


def unsigned_promotion(column: Column) -> tuple[int, int] | None:
    """(signed maximum, wider code) when the column's java.sql.Types code depends on the value (an
    unsigned integer column), else None: the code is then `java_sql_type(column, None)` for every row."""
    name = _base_type(column)
    if column.unsigned and name in _INTEGER_CODES:
        return _UNSIGNED_PROMOTION.get(name)
    return None


def mysql_type(column: Column, full: bool) -> str:
    """canal-JSON's `mysqlType`, as tiflow pkg/sink/codec/utils/mysql_types.go GetMySQLType writes it.

    `full` (content-compatible=true): the column's full type as the server describes it (TiDB's
    GetTypeDesc), so the server's COLUMN_TYPE verbatim: `int(11)`, `tinyint(1)`, `year(4)`,
    `bigint(20) unsigned zerofill` on MariaDB, `int` on MySQL 8.0.19+ (which drops display widths).
    A column only the binlog described has no COLUMN_TYPE: its reconstructed type is used.
    Short form: the bare name (binary-charset strings as their binary twins, TiDB's TypeToStr), then
    ` unsigned` (never for BIT or YEAR) and ` zerofill` (never for YEAR), as field_types.go adds them.
    """
    if full:
        return column.column_type or column.mysql_type
    name = _base_type(column)
    if (column.unsigned or column.zerofill) and name not in ("bit", "year"):
        name += " unsigned"  # ZEROFILL implies UNSIGNED
    if column.zerofill and name != "year":
        name += " zerofill"
    return name


def _float32_text(value: float) -> str:
    """The shortest decimal that reads back as the same float32, in plain notation: what Go's
    FormatFloat(v, 'f', -1, 32) writes for TiCDC. numpy's `unique=True` is that same shortest
    round-trip rule (Dragon4); `trim="-"` drops the trailing ".0" Go does not write."""
    return str(numpy.format_float_positional(numpy.float32(value), unique=True, trim="-"))


def _float64_text(value: float) -> str:
    """DOUBLE as TiCDC writes it, Go's FormatFloat(v, 'f', -1, 64) (tiflow pkg/sink/codec/canal/canal_entry.go,
    `formatValue`): the shortest digits that read back as the same double (Python's repr uses the same rule),
    never in exponent form, and no fraction when there is none: "1", not "1.0"."""
    text = repr(value)
    if "e" in text:
        text = format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def _plain(number: Decimal) -> str:
    text = format(number, "f")
    return text


def _fraction(micros: int, fsp: int | None) -> str:
    digits = fsp or 0
    return "." + f"{micros:06d}"[:digits] if digits else ""


def _datetime_text(value: datetime.datetime, fsp: int | None) -> str:
    """DATETIME/TIMESTAMP as TiDB prints them: 4-digit year, `fsp` fraction digits (cut, not rounded: the
    value already has the column's precision); an aware value (TIMESTAMP, mounter) in UTC.

    One isoformat call with all six fraction digits, cut to the column's: `YYYY-MM-DD HH:MM:SS` is 19
    characters (isoformat pads the year to 4 digits), the fraction starts at 20. A UTC value (what the
    mounter gives) prints its wall time before the offset, so only other zones are converted (that
    conversion is most of the cost: about 4x the whole call)."""
    zone = value.tzinfo
    if zone is not None and zone is not datetime.UTC:
        value = value.astimezone(datetime.UTC)
    text = value.isoformat(" ", "microseconds")
    return text[:20 + fsp] if fsp else text[:19]


def _time_text(value: datetime.timedelta, fsp: int | None) -> str:
    total = value.days * 86400 * 1_000_000 + value.seconds * 1_000_000 + value.microseconds
    sign = "-" if total < 0 else ""
    total = abs(total)
    seconds, micros = divmod(total, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}{_fraction(micros, fsp)}"


Formatter = Callable[[Value], str | None]


def value_text(column: Column, value: Value) -> str | None:
    return value_formatter(column)(value)


class FastPath(enum.Enum):
    """A column whose commonest value needs one type test for its text: an `int` is `str(value)`
    (INTEGER), a `str` is itself (STRING). row_text.py inlines these tests; value_formatter has them too."""

    INTEGER = "int"
    STRING = "str"
    NONE = "none"


def fast_path(column: Column) -> FastPath:
    name = _base_type(column)
    if name in _INTEGER_CODES or name == "year":
        return FastPath.INTEGER
    if name in _PLAIN_STRING_TYPES and not column.is_binary:
        return FastPath.STRING
    return FastPath.NONE


def value_formatter(column: Column) -> Formatter:
    """The column's value -> text function, chosen once per table schema (the encoder caches it):
    the common cases (integers, non-binary strings) get a one-test fast path, everything else the
    full dispatch on the value's Python type, with the column's facts looked up once."""
    name = _base_type(column)
    general = _general_formatter(column, name)
    fast = fast_path(column)
    if fast is FastPath.INTEGER:

        def integer(value: Value) -> str | None:
            return str(value) if type(value) is int else None if value is None else general(value)

        return integer
    if fast is FastPath.STRING:

        def string(value: Value) -> str | None:
            return value if type(value) is str or value is None else general(value)

        return string
    if name == "decimal":

        def decimal(value: Value) -> str | None:
            return format(value, "f") if type(value) is Decimal else general(value)

        return decimal
    if name == "double":

        def double(value: Value) -> str | None:
            return _float64_text(value) if type(value) is float else general(value)

        return double
    special = _typed_formatter(column, name, general)
    return special or general


def _typed_formatter(column: Column, name: str, general: Formatter) -> Formatter | None:
    """A one-test fast path for the value type the capture gives this column (mounter), falling back
    to `general` for anything else (NULL, a zero date kept as text): the same text, fewer checks per value."""
    if name == "float":

        def float32(value: Value) -> str | None:
            return _float32_text(value) if type(value) is float else general(value)

        return float32
    if name in ("datetime", "timestamp"):
        fsp = column.fsp

        def moment(value: Value) -> str | None:
            return _datetime_text(value, fsp) if type(value) is datetime.datetime else general(value)

        return moment
    if name == "date":
        return lambda value: value.isoformat() if type(value) is datetime.date else general(value)
    if name == "time":
        fsp = column.fsp
        return lambda value: _time_text(value, fsp) if type(value) is datetime.timedelta else general(value)
    if name in _BLOB_TYPES or column.is_binary:
        return lambda value: value.decode("latin-1") if type(value) is bytes else general(value)
    # Members as the server spells them; any other text goes the general way (case-insensitive match).
    if name == "enum":
        indexes = {"": "0"}
        for index, member in enumerate(column.elements):
            indexes.setdefault(member, str(index + 1))
        return lambda value: indexes.get(value) or general(value) if type(value) is str else general(value)
    if name == "set":
        bits: dict[str, int] = {}
        for index, member in enumerate(column.elements):
            bits.setdefault(member, 1 << index)

        def set_mask(value: Value) -> str | None:
            if type(value) is not str or not value:
                return general(value)
            mask = 0
            for item in value.split(","):
                bit = bits.get(item)
                if bit is None:  # another letter case, or text the server would not send
                    return general(value)
                mask |= bit
            return str(mask)

        return set_mask
    return None


# Non-binary string types whose str values are sent as they are (ENUM, SET and JSON are rewritten).
_PLAIN_STRING_TYPES = {"char", "varchar", *_TEXT_TYPES}


def _general_formatter(column: Column, name: str) -> Formatter:
    latin1 = column.is_binary or name in _BLOB_TYPES

    def general(value: Value) -> str | None:
        if value is None:
            return None
        if isinstance(value, bytes):
            if name == "bit":
                return str(int.from_bytes(value, "big"))
            return value.decode("latin-1") if latin1 else value.decode("utf-8")
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return _float32_text(value) if name == "float" else _float64_text(value)
        if isinstance(value, Decimal):
            return _plain(value)
        if isinstance(value, datetime.datetime):
            return _datetime_text(value, column.fsp)
        if isinstance(value, datetime.date):
            return value.isoformat()
        if isinstance(value, datetime.timedelta):
            return _time_text(value, column.fsp)
        if name in ("enum", "set"):
            return _enum_set_number(column, value)
        if name == "json":
            return _json_text(value)
        return value

    return general


def _json_text(text: str) -> str:
    """JSON as TiDB prints it (TiCDC sends TiDB's text, not what the client typed; tiflow
    pkg/sink/codec/utils/test_utils.go expects `{"key1": "value1"}`): `": "` and `", "` separators,
    object keys sorted (TiDB's binary JSON keeps them sorted). MariaDB stores JSON as the typed text,
    so it is normalised here; text that is not JSON (invalid data in a LONGTEXT) is passed through."""
    try:
        parsed = _parse_json(text)
    except ValueError:
        return text
    return _TIDB_JSON.encode(parsed)


def _parse_json(text: str) -> Any:
    """Python's parser decides what JSON means here; orjson only makes the common case faster. It refuses some
    of what Python takes (NaN, Infinity, 1e400, lone surrogate escapes), and reads an integer past 64 bits as a
    float when it is outside -2**63..2**64-1 (2**64 would print as 1.8446744073709552e+19): a text with 19 digits
    in a row, which every such integer has, goes the standard way."""
    if not _LONG_DIGITS.search(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


_LONG_DIGITS = re.compile(r"\d{19}")
# (The encoder object once, not json.dumps's per-call set-up.)
_TIDB_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def _enum_set_number(column: Column, value: str) -> str:
    """TiCDC sends ENUM as its 1-based index and SET as its bitmask; '' (invalid enum) is 0."""
    members = [member.lower() for member in column.elements]
    if _base_type(column) == "enum":
        return str(members.index(value.lower()) + 1) if value else "0"
    mask = 0
    for item in filter(None, value.split(",")):
        mask |= 1 << members.index(item.lower())
    return str(mask)
