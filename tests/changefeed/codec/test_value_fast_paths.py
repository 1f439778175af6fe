"""Each column type's fast formatter gives the text of the full dispatch (`_general_formatter`) on every
value the capture can give it, and on values it should hand over (NULL, zero dates kept as text, another
letter case of an ENUM or SET member). TiCDC's own expected texts are checked in test_canal_json_ticdc.py;
this checks the per-type shortcuts did not drift from them."""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from changefeed.codec.values import _base_type, _general_formatter, _json_text, value_formatter
from changefeed.model import Column

UTC = datetime.UTC


def _moment(rng: random.Random) -> datetime.datetime:
    return datetime.datetime(rng.choice([1, 99, 999, 1000, 1970, 2026, 9999]), rng.randint(1, 12), rng.randint(1, 28),
                             rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                             rng.choice([0, 1, 500000, 999999, rng.randint(0, 999999)]))


CASES: list[tuple[Column, Callable[[random.Random], Any]]] = [
    (Column("f", "float", "float"), lambda r: r.choice([0.0, -0.0, 1e-45, 3.4e38, r.uniform(-1e6, 1e6)])),
    (Column("g", "double", "double"),
     lambda r: r.choice([0.0, -0.0, 1.0, 5e-324, 1.7976931348623157e308, float(r.randint(-10**6, 10**6)),
                         r.uniform(-1e6, 1e6), r.uniform(-1, 1) * 10.0 ** r.randint(-30, 30)])),
    *[(Column(f"dt{fsp}", "datetime", f"datetime({fsp})", fsp=fsp), _moment) for fsp in (None, 0, 1, 3, 6)],
    (Column("ts", "timestamp", "timestamp(3)", fsp=3),
     lambda r: _moment(r).replace(tzinfo=r.choice([UTC, datetime.timezone(datetime.timedelta(hours=-8))]))),
    (Column("d", "date", "date"), lambda r: r.choice([_moment(r).date(), "0000-00-00", "2024-02-00"])),
    (Column("t", "time", "time(2)", fsp=2),
     lambda r: datetime.timedelta(microseconds=r.randint(-(839 * 3600 * 10**6), 839 * 3600 * 10**6))),
    (Column("t0", "time", "time"), lambda r: datetime.timedelta(seconds=r.randint(-3_000_000, 3_000_000))),
    (Column("bn", "varbinary", "varbinary(8)", charset="binary"), lambda r: r.randbytes(r.randint(0, 8))),
    (Column("bl", "blob", "blob", charset="binary"), lambda r: r.randbytes(r.randint(0, 40))),
    (Column("c", "char", "char(4)", charset="binary"), lambda r: r.randbytes(4)),
    (Column("e", "enum", "enum('a','B','c d')", elements=("a", "B", "c d")),
     lambda r: r.choice(["a", "B", "c d", "", "b", "A", "C D"])),
    (Column("s", "set", "set('x','Y','z')", elements=("x", "Y", "z")),
     lambda r: r.choice(["", "x", "Y", "z", "x,Y", "x,z", "x,Y,z", "y", "X,y", "Y,z"])),
    (Column("j", "json", "json"), lambda r: r.choice(['{"b": 1, "a": [1, "é"]}', "not json", "[]"])),
    (Column("b", "bit", "bit(10)", length=10), lambda r: r.randint(0, 1023)),
    (Column("dc", "decimal", "decimal(10,2)"), lambda r: Decimal(r.randint(-10**10, 10**10)).scaleb(-2)),
]


@pytest.mark.parametrize("column, make", CASES, ids=[column.mysql_type for column, _ in CASES])
def test_the_fast_formatter_gives_the_full_dispatchs_text(column: Column, make: Callable[[random.Random], Any]) -> None:
    rng = random.Random(7)
    fast = value_formatter(column)
    full = _general_formatter(column, _base_type(column))
    for value in [None, *(make(rng) for _ in range(300))]:
        assert fast(value) == full(value), f"{column.mysql_type} {value!r}"


def test_datetimes_before_year_1000_keep_four_year_digits() -> None:
    """TiDB prints a DATETIME's year with 4 digits ('0099-05-06 07:08:09'); strftime('%Y') did not."""
    column = Column("dt", "datetime", "datetime(3)", fsp=3)
    assert value_formatter(column)(datetime.datetime(99, 5, 6, 7, 8, 9, 123456)) == "0099-05-06 07:08:09.123"
    assert value_formatter(column)(datetime.datetime(1, 1, 1)) == "0001-01-01 00:00:00.000"


@pytest.mark.parametrize("stored, text", [
    (3.4028234663852886e38, "340282350000000000000000000000000000000"),  # FLOAT's maximum: raised OverflowError
    (-3.4028234663852886e38, "-340282350000000000000000000000000000000"),
    (1.401298464324817e-45, "0.000000000000000000000000000000000000000000001"),  # the smallest subnormal
    (1.100000023841858, "1.1"), (16777216.0, "16777216"), (-0.0, "-0"), (0.0, "0"), (2.5e-08, "0.000000025"),
])
def test_float_text_is_gos_shortest_float32_text(stored: float, text: str) -> None:
    """TiCDC writes FLOAT with Go's strconv.FormatFloat(v, 'f', -1, 32): the fewest digits that read back
    as the same float32, never in exponent form. A value near FLOAT's maximum used to stop the encoder (a
    candidate text rounded past the float32 range)."""
    assert value_formatter(Column("f", "float", "float"))(stored) == text


@pytest.mark.parametrize("stored, text", [
    (1.0, "1"), (100.0, "100"), (-2.0, "-2"), (0.0, "0"), (-0.0, "-0"), (0.1, "0.1"), (-2.5, "-2.5"),
    (1e20, "100000000000000000000"), (1.5e16, "15000000000000000"), (1e-07, "0.0000001"),
    (1234567.125, "1234567.125"), (5e-324, "0." + "0" * 323 + "5"),
    (1.7976931348623157e308, "17976931348623157" + "0" * 292),
])
def test_double_text_is_gos_shortest_float64_text(stored: float, text: str) -> None:
    """TiCDC writes DOUBLE with Go's strconv.FormatFloat(v, 'f', -1, 64) (tiflow canal_entry.go formatValue):
    the fewest digits that read back as the same double, never in exponent form, no ".0" on a whole number.
    The encoder used to write "1.0" for 1 (Python's repr)."""
    assert value_formatter(Column("g", "double", "double"))(stored) == text


def _reference_datetime_text(value: datetime.datetime, fsp: int | None) -> str:
    """Field by field, with the offset subtracted by hand: no isoformat, no astimezone."""
    offset = value.utcoffset()
    if offset is not None:
        value = value.replace(tzinfo=None) - offset
    text = (f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
            f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}")
    return text + ("." + str(value.microsecond).rjust(6, "0")[:fsp] if fsp else "")


def test_datetime_text_is_the_fields_in_utc_cut_to_the_columns_digits() -> None:
    """The DATETIME/TIMESTAMP text (one isoformat call, cut; aware values other than UTC converted) against
    the fields printed one by one, over naive values, UTC ones and zones either side of UTC."""
    rng = random.Random(11)
    zones = [None, UTC, datetime.timezone(datetime.timedelta(hours=-8)),
             datetime.timezone(datetime.timedelta(hours=5, minutes=45)), datetime.timezone(datetime.timedelta(0))]
    for _ in range(3000):
        value = _moment(rng).replace(tzinfo=rng.choice(zones), year=rng.choice([2, 1000, 2026, 9998]))
        fsp = rng.choice([None, 0, 1, 2, 3, 4, 5, 6])
        column = Column("ts", "timestamp", "timestamp", fsp=fsp)
        assert value_formatter(column)(value) == _reference_datetime_text(value, fsp), (value, fsp)


def _random_json(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:  # integers at and past the 64-bit edges, where orjson turns to floats
        edge = rng.choice([0, 2**31, 2**53, 2**63, 2**64, 10**19, 10**25])
        return str(rng.choice([1, -1]) * (edge + rng.randint(-2, 2)))
    if kind == 1:
        return f"{rng.uniform(-10, 10)!r}e{rng.randint(-330, 310)}"  # subnormals and overflow too
    if kind == 2:
        return rng.choice(["1e400", "-1E-400", "NaN", "Infinity", "-0", "-0.0", "1.5e3", "0.1000000000000000055511"])
    if kind == 3:
        return rng.choice(["true", "false", "null", '""', "[]", "{}"])
    if kind in (4, 5):
        chars = [rng.choice('aZé€😀"\\/<>&\u2028\t\n') for _ in range(rng.randint(0, 6))]
        return json.dumps("".join(chars), ensure_ascii=rng.random() < 0.5)
    if kind == 6:
        return "[" + ", ".join(_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))) + "]"
    keys = [rng.choice(["a", "B", "é", "z", "10", "2", ""]) for _ in range(rng.randint(0, 4))]  # duplicates too
    return "{" + ",".join(f"{json.dumps(k)}:{_random_json(rng, depth + 1)}" for k in keys) + "}"


def test_json_text_is_what_pythons_parser_reads() -> None:
    """JSON columns are parsed with orjson when it can: the text must be the one Python's parser gives (it
    decided before), on integers past 64 bits, NaN, 1e400, duplicate keys, escapes and text that is not JSON."""
    rng = random.Random(5)
    texts = [_random_json(rng) for _ in range(4000)]
    texts += ['"\\ud800"', "[1,]", "not json", '"\x00"', "18446744073709551616"]
    for text in texts:
        try:
            expected = json.dumps(json.loads(text), ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
        except ValueError:
            expected = text
        assert _json_text(text) == expected, text
