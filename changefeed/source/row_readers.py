"""Per-column readers of binlog row values, straight from the event's bytes (pure, no I/O).

Each reader gives exactly the value python-mysql-replication 1.0.17 gives for the column (its
`RowsEvent.__read_values_name` and helpers; `tests/changefeed/source/test_row_decoder.py` compares the
two on a real server's binlog), so the quirks `mounter` fixes stay as they are. A value the library
treats specially (a zero or invalid date, an out-of-range enum index, an empty SET) is not read here: the reader
answers `LIBRARY` without moving, and the library reads it. Layouts: MySQL's
libbinlogevents/src/binary_log_funcs.cpp and sql-common/my_time.cc (DATETIME2, TIMESTAMP2, fractional
seconds), strings/decimal.cc (DECIMAL).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent

LIBRARY: Any = object()  # "let the library read this value": the position is not moved
_EPOCH = datetime.datetime(1970, 1, 1)

# (the event's bytes, where the value starts) -> (value, where the next one starts)
Reader = Callable[[bytes, int], tuple[Any, int]]

_NUMBERS: dict[tuple[int, bool], struct.Struct] = {
    (FIELD_TYPE.TINY, False): struct.Struct("<b"), (FIELD_TYPE.TINY, True): struct.Struct("<B"),
    (FIELD_TYPE.SHORT, False): struct.Struct("<h"), (FIELD_TYPE.SHORT, True): struct.Struct("<H"),
    (FIELD_TYPE.LONG, False): struct.Struct("<i"), (FIELD_TYPE.LONG, True): struct.Struct("<I"),
    (FIELD_TYPE.LONGLONG, False): struct.Struct("<q"), (FIELD_TYPE.LONGLONG, True): struct.Struct("<Q"),
    (FIELD_TYPE.FLOAT, False): struct.Struct("<f"), (FIELD_TYPE.FLOAT, True): struct.Struct("<f"),
    (FIELD_TYPE.DOUBLE, False): struct.Struct("<d"), (FIELD_TYPE.DOUBLE, True): struct.Struct("<d"),
}


def _number(layout: struct.Struct) -> Reader:
    unpack, size = layout.unpack_from, layout.size

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return unpack(data, pos)[0], pos + size

    return read


def _int24(unsigned: bool) -> Reader:
    def read(data: bytes, pos: int) -> tuple[Any, int]:
        value = int.from_bytes(data[pos:pos + 3], "little", signed=not unsigned)
        return value, pos + 3

    return read


def _year(data: bytes, pos: int) -> tuple[Any, int]:
    return data[pos] + 1900, pos + 1  # the library's value; mounter maps 1900 (YEAR 0000) back to 0


def _text_decoder(column: Any, ignore_errors: bool) -> Callable[[bytes], Any] | None:
    """How the library's `__read_string` turns the bytes into a value, or None where it would fail."""
    errors = "ignore" if ignore_errors else "strict"
    if column.character_set_name is None:
        return lambda raw: raw.decode("utf-8", errors)
    encoding = RowsEvent.charset_to_encoding(column.character_set_name)
    if not isinstance(encoding, str):
        return None  # the library would raise on it: let it, on its own path
    try:
        "".encode(encoding)
    except LookupError:
        # 'binary' and charsets Python lacks stay bytes, as in the library; but CPython decodes b'' to ''
        # before it looks the codec up, so an empty one is str there (mounter turns it back into b'').
        return lambda raw: raw or ""
    return lambda raw: raw.decode(encoding, errors)


def string_overrun(length: int) -> ValueError:
    return ValueError(f"a string of {length} bytes runs past the end of the rows event")


def _string(length_size: int, decode: Callable[[bytes], Any]) -> Reader:
    def read(data: bytes, pos: int) -> tuple[Any, int]:
        start = pos + length_size
        end = start + int.from_bytes(data[pos:start], "little")
        if end > len(data):
            raise string_overrun(end - start)
        return decode(data[start:end]), end

    return read


def _fraction(fsp: int) -> tuple[int, Callable[[bytes, int], int]]:
    """Fractional seconds: (fsp + 1) // 2 big-endian bytes, to microseconds (the library's __read_fsp)."""
    size = (fsp + 1) // 2
    scale: int = 10 ** (6 - fsp)

    def micro(data: bytes, pos: int) -> int:
        value = int.from_bytes(data[pos:pos + size], "big", signed=True)
        if fsp % 2:
            value = int(value / 10)
        return value * scale

    return size, micro


def _datetime2(fsp: int) -> Reader:
    size, micro = _fraction(fsp)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        packed = int.from_bytes(data[pos:pos + 5], "big")
        year_month = (packed >> 22) & 0x1FFFF
        try:
            value = datetime.datetime(year_month // 13, year_month % 13, (packed >> 17) & 0x1F,
                                      (packed >> 12) & 0x1F, (packed >> 6) & 0x3F, packed & 0x3F)
        except ValueError:
            return LIBRARY, pos  # a zero date: None, with the library's note of why
        fraction = micro(data, pos + 5) if size else 0
        if fraction > 0:
            value = value.replace(microsecond=fraction)
        return value, pos + 5 + size

    return read


def _timestamp2(fsp: int) -> Reader:
    size, micro = _fraction(fsp)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        seconds = int.from_bytes(data[pos:pos + 4], "big", signed=True)
        value = _EPOCH + datetime.timedelta(seconds=seconds)  # naive UTC, as utcfromtimestamp gives
        fraction = micro(data, pos + 4) if size else 0
        if fraction > 0:
            value = value.replace(microsecond=fraction)
        return value, pos + 4 + size

    return read


def _date(data: bytes, pos: int) -> tuple[Any, int]:
    packed = int.from_bytes(data[pos:pos + 3], "little")
    year, month, day = packed >> 9, (packed >> 5) & 0xF, packed & 0x1F
    if not (year and month and day):
        return LIBRARY, pos
    try:
        return datetime.date(year, month, day), pos + 3
    except ValueError:
        return LIBRARY, pos


def time2_value(raw: bytes, fsp: int) -> datetime.timedelta:
    """TIME2 as MySQL's my_time_packed_from_binary reads it (`raw`: 3 + (fsp + 1) // 2 bytes).

    The library decodes the integer and fractional parts separately, which is wrong for negative
    times with a fraction ('-00:00:00.000001' came back as -0.999999 s); the packed value is one
    offset big-endian number whose sign covers both parts. binlog_reader gives the library this too.
    """
    frac_bytes = (fsp + 1) // 2
    intpart = int.from_bytes(raw[:3], "big") - 0x800000
    if frac_bytes == 3:
        packed = int.from_bytes(raw[:6], "big") - 0x800000000000
    elif frac_bytes == 0:
        packed = intpart << 24
    else:
        frac = int.from_bytes(raw[3:3 + frac_bytes], "big")
        if intpart < 0 and frac:
            intpart += 1
            frac -= 1 << (8 * frac_bytes)
        packed = (intpart << 24) + frac * (10000 if frac_bytes == 1 else 100)
    sign = -1 if packed < 0 else 1
    packed = abs(packed)
    hms, micro = packed >> 24, packed & 0xFFFFFF
    return sign * datetime.timedelta(hours=(hms >> 12) & 0x3FF, minutes=(hms >> 6) & 0x3F, seconds=hms & 0x3F,
                                     microseconds=micro)


def _time2(fsp: int) -> Reader:
    size = 3 + (fsp + 1) // 2

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return time2_value(data[pos:pos + size], fsp), pos + size

    return read


def _set(size: int, values: list[str]) -> Reader:
    """The library's SET value: the set of the members whose bits are on (bits past the list ignored);
    an empty set is its None with a note (EMPTY_SET) mounter reads, so that one is left to it."""
    members = list(enumerate(values))

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        mask = int.from_bytes(data[pos:pos + size], "little")
        chosen = {value for index, value in members if mask >> index & 1}
        if not chosen:
            return LIBRARY, pos
        return chosen, pos + size

    return read


def _bit(size: int, bits: int) -> Reader:
    """The library's BIT value: the column's `bits` low bits as a text of 0s and 1s, most significant
    first (its __read_bit takes the first byte's `bits % 8` low bits, then 8 per byte)."""
    width = f"0{bits}b"
    keep = (1 << bits) - 1

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        return format(int.from_bytes(data[pos:pos + size], "big") & keep, width), pos + size

    return read


def _enum(size: int, values: list[str]) -> Reader:
    def read(data: bytes, pos: int) -> tuple[Any, int]:
        index = int.from_bytes(data[pos:pos + size], "little")
        if index >= len(values):
            return LIBRARY, pos
        return values[index], pos + size

    return read


_COMPRESSED = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes for 0-8 leftover decimal digits


def _decimal(precision: int, scale: int) -> Reader:
    """MySQL's binary DECIMAL: groups of 9 digits in 4 big-endian bytes, the leftover digits of the
    integer and fraction parts in fewer; the sign bit is the top bit of the first byte, flipped, and a
    negative number has all its bytes inverted. The text is built as the library builds it."""
    whole_groups, whole_left = divmod(precision - scale, 9)
    fraction_groups, fraction_left = divmod(scale, 9)
    head, tail = _COMPRESSED[whole_left], _COMPRESSED[fraction_left]
    size = head + 4 * (whole_groups + fraction_groups) + tail

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        raw = bytearray(data[pos:pos + size])
        negative = not raw[0] & 0x80
        raw[0] ^= 0x80
        if negative:
            raw = bytearray(b ^ 0xFF for b in raw)
        parts = ["-"] if negative else []
        at = 0
        if head:
            parts.append(str(int.from_bytes(raw[:head], "big")))
            at = head
        for _ in range(whole_groups):
            parts.append(f"{int.from_bytes(raw[at:at + 4], 'big'):09d}")
            at += 4
        parts.append(".")
        for _ in range(fraction_groups):
            parts.append(f"{int.from_bytes(raw[at:at + 4], 'big'):09d}")
            at += 4
        if tail:
            parts.append(f"{int.from_bytes(raw[at:at + tail], 'big'):0{fraction_left}d}")
        return Decimal("".join(parts)), pos + size

    return read


def fixed_layout(column: Any) -> struct.Struct | None:
    """The struct layout of a fixed-width number column (TINYINT..BIGINT but MEDIUMINT, FLOAT, DOUBLE)."""
    return _NUMBERS.get((column.type, bool(column.unsigned)))


def string_layout(column: Any, ignore_errors: bool) -> tuple[int, Callable[[bytes], Any]] | None:
    """A string or blob column's length prefix size and decoding, or None where only the library reads it."""
    kind = column.type
    if kind not in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
        return None
    decode = _text_decoder(column, ignore_errors)
    if decode is None:
        return None
    if kind == FIELD_TYPE.BLOB:
        return int(column.length_size), decode
    return (2 if column.max_length > 255 else 1), decode


def column_reader(column: Any, ignore_errors: bool) -> Reader | None:
    """The reader for a column of the library's TABLE_MAP, or None where only the library reads it
    (MySQL's binary JSON, GEOMETRY, the old pre-5.6 temporal types, strings in charsets it fails on)."""
    kind = column.type
    if kind == FIELD_TYPE.INT24:
        return _int24(bool(column.unsigned))
    layout = fixed_layout(column)
    if layout is not None:
        return _number(layout)
    if kind == FIELD_TYPE.YEAR:
        return _year
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
        string = string_layout(column, ignore_errors)
        return None if string is None else _string(*string)
    if kind == FIELD_TYPE.DATETIME2:
        return _datetime2(column.fsp or 0)
    if kind == FIELD_TYPE.TIMESTAMP2:
        return _timestamp2(column.fsp or 0)
    if kind == FIELD_TYPE.DATE:
        return _date
    if kind == FIELD_TYPE.ENUM and column.enum_values:
        return _enum(column.size, list(column.enum_values))
    if kind == FIELD_TYPE.NEWDECIMAL:
        return _decimal(column.precision, column.decimals)
    if kind == FIELD_TYPE.TIME2:
        return _time2(column.fsp or 0)
    if kind == FIELD_TYPE.SET and column.set_values:
        return _set(column.size, list(column.set_values))
    if kind == FIELD_TYPE.BIT:
        return _bit(column.bytes, column.bits)
    return None
