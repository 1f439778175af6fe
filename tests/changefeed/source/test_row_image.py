"""The compiled image reader gives what reading column by column with row_readers gives, on random images.

Random table versions (numbers of every width in runs of every length, strings with 1-4 byte length
prefixes, ENUM, YEAR, MEDIUMINT, BIT), random NULL bitmaps spanning several bytes, random values; the
reference is the plain loop over `column_reader`. test_row_decoder.py compares both with the library on a
real server's binlog.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from pymysqlreplication.constants import FIELD_TYPE

from changefeed.source.row_image import compile_image
from changefeed.source.row_readers import column_reader


@dataclass
class Column:  # the attributes of the library's TABLE_MAP column that the readers use
    name: str
    type: int
    unsigned: bool = False
    max_length: int = 0
    length_size: int = 0
    character_set_name: str | None = "utf8mb4"
    size: int = 1
    bits: int = 0
    bytes: int = 0
    enum_values: list[str] = field(default_factory=list)


_SIZES = {FIELD_TYPE.TINY: 1, FIELD_TYPE.SHORT: 2, FIELD_TYPE.LONG: 4, FIELD_TYPE.LONGLONG: 8,
          FIELD_TYPE.FLOAT: 4, FIELD_TYPE.DOUBLE: 8, FIELD_TYPE.INT24: 3, FIELD_TYPE.YEAR: 1}


def _column(rng: random.Random, index: int) -> Column:
    name = f"c{index}'\"\\{index}"  # quotes in a name must stay data
    kind = rng.choice([*_SIZES, FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB, FIELD_TYPE.ENUM,
                       FIELD_TYPE.BIT, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG])
    if kind == FIELD_TYPE.VARCHAR:
        return Column(name, kind, max_length=rng.choice([20, 255, 256, 3000]))
    if kind == FIELD_TYPE.STRING:
        return Column(name, kind, max_length=rng.choice([4, 255, 400]),
                      character_set_name=rng.choice(["utf8mb4", "latin1", None]))
    if kind == FIELD_TYPE.BLOB:
        return Column(name, kind, length_size=rng.randint(1, 4), character_set_name=rng.choice(["binary", "utf8mb4"]))
    if kind == FIELD_TYPE.ENUM:
        return Column(name, kind, size=1, enum_values=["a", "b", "c"])
    if kind == FIELD_TYPE.BIT:
        bits = rng.randint(1, 64)
        return Column(name, kind, bits=bits, bytes=(bits + 7) // 8)
    return Column(name, kind, unsigned=rng.random() < 0.5)


def _value_bytes(rng: random.Random, column: Column) -> bytes:
    if column.type in _SIZES:
        return rng.randbytes(_SIZES[column.type])
    if column.type == FIELD_TYPE.ENUM:
        return bytes([rng.randint(0, 2)])
    if column.type == FIELD_TYPE.BIT:
        return rng.randbytes(column.bytes)
    prefix = column.length_size if column.type == FIELD_TYPE.BLOB else 2 if column.max_length > 255 else 1
    longest = 40 if prefix == 1 or rng.random() < 0.7 else 400  # past 255 bytes: a second length byte
    text = "".join(rng.choice("abc xyz'é☃") for _ in range(rng.randint(0, longest))).encode(
        "latin1" if column.character_set_name == "latin1" else "utf-8", "replace")
    return len(text).to_bytes(prefix, "little") + text


def _image(rng: random.Random, columns: list[Column], null_share: float) -> bytes:
    nulls = bytearray((len(columns) + 7) // 8)
    values = b""
    for i, column in enumerate(columns):
        if rng.random() < null_share:
            nulls[i >> 3] |= 1 << (i & 7)
        else:
            values += _value_bytes(rng, column)
    return bytes(nulls) + values


def _column_by_column(columns: list[Column], data: bytes, pos: int) -> tuple[dict[str, Any], int]:
    nulls = data[pos:pos + (len(columns) + 7) // 8]
    pos += len(nulls)
    values: dict[str, Any] = {}
    for i, column in enumerate(columns):
        if nulls[i >> 3] & 1 << (i & 7):
            values[column.name] = None
        else:
            read = column_reader(column, ignore_errors=False)
            assert read is not None
            values[column.name], pos = read(data, pos)
    return values, pos


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or (a != a and b != b))  # NaN from random float bytes


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_reader_gives_the_per_column_readers_values(seed: int) -> None:
    rng = random.Random(seed)
    columns = [_column(rng, i) for i in range(rng.randint(1, 40))]
    image = compile_image(columns, ignore_errors=False, note_nulls=False)
    for null_share in (0.0, 0.1, 0.5, 1.0):
        for _ in range(20):
            data = b"\x07prefix" + _image(rng, columns, null_share) + b"next"
            got, end = image(None, None, data, 7)  # no column goes to the library
            want, want_end = _column_by_column(columns, data, 7)
            assert end == want_end == len(data) - 4
            assert list(got) == list(want)
            assert all(_same(got[name], want[name]) for name in want), (got, want)


def test_a_string_running_past_the_event_is_an_error() -> None:
    columns = [Column("id", FIELD_TYPE.LONG), Column("s", FIELD_TYPE.VARCHAR, max_length=300)]
    image = compile_image(columns, ignore_errors=False, note_nulls=False)
    data = b"\x00" + (5).to_bytes(4, "little") + (50).to_bytes(2, "little") + b"short"
    with pytest.raises(ValueError, match="a string of 50 bytes runs past the end of the rows event"):
        image(None, None, data, 0)


def test_a_run_of_numbers_is_one_unpack_and_a_null_in_it_falls_back_per_column() -> None:
    columns = [Column("a", FIELD_TYPE.LONG), Column("b", FIELD_TYPE.LONGLONG, unsigned=True),
               Column("c", FIELD_TYPE.DOUBLE)]
    image = compile_image(columns, ignore_errors=False, note_nulls=False)
    assert image.source.count("unpack") == 4  # type: ignore[attr-defined]  # the run's, and one per column
    values = (-5).to_bytes(4, "little", signed=True) + (2**64 - 1).to_bytes(8, "little")
    assert image(None, None, b"\x04" + values, 0) == ({"a": -5, "b": 2**64 - 1, "c": None}, 13)
