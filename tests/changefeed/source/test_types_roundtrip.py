"""Every MySQL column type goes through a real MariaDB binlog and comes back with the exact value."""

import datetime
import struct
from decimal import Decimal

from changefeed.model import Checkpoint, RowKind
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture, rows_of

UTC = datetime.UTC

COLUMNS = """
  id int unsigned PRIMARY KEY,
  ti tinyint, tiu tinyint unsigned, si smallint, siu smallint unsigned, mi mediumint, miu mediumint unsigned,
  i int, iu int unsigned, bi bigint, biu bigint unsigned,
  d decimal(10,2), du decimal(30,10) unsigned, f float, db double,
  b1 bit(1), b10 bit(10), b64 bit(64),
  c char(5), v varchar(40), tt tinytext, tx text, mt mediumtext, lt longtext,
  bn binary(4), vb varbinary(8), tb tinyblob, bl blob, lb longblob,
  e enum('a','b','c d'), st set('x','y','z'),
  dt date, dtt datetime, dtt6 datetime(6), ts timestamp(3) NULL, ts0 timestamp NULL,
  tm time, tm6 time(6), tm2 time(2), tm4 time(4), y year, j json,
  UNIQUE KEY uk_v (v)
"""


def f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


ROWS = [
    {  # maxima, multibyte text, fractional seconds
        "id": 4294967295,
        "ti": 127,
        "tiu": 255,
        "si": 32767,
        "siu": 65535,
        "mi": 8388607,
        "miu": 16777215,
        "i": 2147483647,
        "iu": 4294967295,
        "bi": 9223372036854775807,
        "biu": 18446744073709551615,
        "d": Decimal("99999999.99"),
        "du": Decimal("12345678901234567890.0123456789"),
        "f": f32(3.14),
        "db": 2.718281828459045,
        "b1": 1,
        "b10": 0b1010101010,
        "b64": 2**64 - 1,
        "c": "ab😀",
        "v": "héllo wörld 😀",
        "tt": "tiny ☃",
        "tx": "text 😀" * 100,
        "mt": "m" * 70000,
        "lt": "long ✓",
        "bn": b"\x01\x02\x00\x00",
        "vb": b"\x00\xff\x00",
        "tb": b"\x00",
        "bl": bytes(range(256)),
        "lb": b"\xde\xad\xbe\xef\x00",
        "e": "c d",
        "st": "x,z",
        "dt": datetime.date(2024, 2, 29),
        "dtt": datetime.datetime(9999, 12, 31, 23, 59, 59),
        "dtt6": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
        "ts": datetime.datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=UTC),
        "ts0": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        "tm": datetime.timedelta(hours=838, minutes=59, seconds=59),
        "tm6": -datetime.timedelta(seconds=1, microseconds=500000),
        "y": 2155,
        "tm2": -datetime.timedelta(microseconds=10000),
        "tm4": -datetime.timedelta(seconds=1, microseconds=100),
        "j": '{"a": [1, 2.5, "x", null, true], "b": {"c": "ü"}}',
    },
    {  # minima and edge values
        "id": 0,
        "ti": -128,
        "tiu": 0,
        "si": -32768,
        "siu": 0,
        "mi": -8388608,
        "miu": 0,
        "i": -2147483648,
        "iu": 0,
        "bi": -9223372036854775808,
        "biu": 0,
        "d": Decimal("-99999999.99"),
        "du": Decimal("0E-10"),
        "f": f32(-1.5e-30),
        "db": -1.7976931348623157e308,
        "b1": 0,
        "b10": 0,
        "b64": 0,
        "c": "",
        "v": "",
        "tt": "",
        "tx": "",
        "mt": "",
        "lt": "",
        "bn": b"\x00\x00\x00\x00",
        "vb": b"",
        "tb": b"",
        "bl": b"",
        "lb": b"",
        "e": "a",
        "st": "",
        "dt": datetime.date(1000, 1, 1),
        "dtt": datetime.datetime(1000, 1, 1, 0, 0, 0),
        "dtt6": datetime.datetime(1000, 1, 1, 0, 0, 0, 1),
        "ts": datetime.datetime(1970, 1, 1, 0, 0, 1, 1000, tzinfo=UTC),
        "ts0": None,
        "tm": -datetime.timedelta(hours=838, minutes=59, seconds=59),
        "tm6": -datetime.timedelta(microseconds=1),
        "y": 0,
        "j": "[]",
        "tm2": datetime.timedelta(hours=838, minutes=59, seconds=58, microseconds=990000),
        "tm4": -datetime.timedelta(hours=838, minutes=59, seconds=58, microseconds=999900),
    },
    {  # mid values, negative fractional time with whole seconds
        "id": 7,
        "ti": -1,
        "tiu": 128,
        "si": -1,
        "siu": 32768,
        "mi": -1,
        "miu": 8388608,
        "i": -1,
        "iu": 2147483648,
        "bi": -1,
        "biu": 9223372036854775808,
        "d": Decimal("0.01"),
        "du": Decimal("1.0000000001"),
        "f": f32(0.1),
        "db": 0.1,
        "b1": 1,
        "b10": 1,
        "b64": 2**63,
        "c": "abcde",
        "v": "x" * 40,
        "tt": "t",
        "tx": "t",
        "mt": "t",
        "lt": "t",
        "bn": b"abcd",
        "vb": b"12345678",
        "tb": b"t",
        "bl": b"t",
        "lb": b"t",
        "e": "b",
        "st": "x,y,z",
        "dt": datetime.date(2000, 1, 1),
        "dtt": datetime.datetime(2000, 1, 1, 12, 0, 0),
        "dtt6": datetime.datetime(2000, 1, 1, 12, 0, 0, 500000),
        "ts": datetime.datetime(2000, 1, 1, 12, 0, 0, 500000, tzinfo=UTC),
        "ts0": datetime.datetime(2000, 1, 1, 12, 0, 0, tzinfo=UTC),
        "tm": datetime.timedelta(0),
        "tm6": -datetime.timedelta(hours=1, minutes=2, seconds=3, microseconds=456789),
        "y": 1901,
        "j": '"string"',
        "tm2": -datetime.timedelta(hours=1, microseconds=500000),
        "tm4": datetime.timedelta(seconds=1, microseconds=100),
    },
]
NULLS = {"id": 8, **{name: None for name in ROWS[0] if name != "id"}}


def _sql_value(value: object) -> object:
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.replace(tzinfo=None)
    if isinstance(value, datetime.timedelta):
        sign = "-" if value < datetime.timedelta(0) else ""
        total = abs(value)
        seconds = total.days * 86400 + total.seconds
        return f"{sign}{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{total.microseconds:06d}"
    return value


def _insert(mysql: MySQLServer, database: str, rows: list[dict[str, object]]) -> None:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for row in rows:
            names = ", ".join(f"`{k}`" for k in row)
            marks = ", ".join("%s" for _ in row)
            cur.execute(f"INSERT INTO t ({names}) VALUES ({marks})", [_sql_value(v) for v in row.values()])


def test_every_type_round_trips_exactly(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: Checkpoint
) -> None:
    mysql.execute(f"CREATE TABLE t ({COLUMNS}) CHARACTER SET utf8mb4", database=database)
    _insert(mysql, database, [*ROWS, NULLS])
    mysql.execute(
        "UPDATE t SET v = 'changed', st = 'y' WHERE id = 7", "DELETE FROM t WHERE id = 0", database=database
    )

    events = capture(settings, here)
    changes = list(rows_of(events, "t"))
    inserts = [c.after for c in changes if c.kind is RowKind.INSERT]
    for got, want in zip(inserts, [*ROWS, NULLS], strict=True):
        assert got is not None
        diff = {k: (got[k], v) for k, v in want.items() if got[k] != v or type(got[k]) is not type(v)}
        assert not diff
    assert inserts == [*ROWS, NULLS]
    for got, want in zip(inserts, [*ROWS, NULLS], strict=True):
        assert got is not None
        for name, value in want.items():
            assert type(got[name]) is type(value), name

    update = next(c for c in changes if c.kind is RowKind.UPDATE)
    assert update.before == ROWS[2]
    assert update.after == {**ROWS[2], "v": "changed", "st": "y"}
    delete = next(c for c in changes if c.kind is RowKind.DELETE)
    assert delete.before == ROWS[1] and delete.after is None


def test_schema_carries_what_canal_json_needs(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: Checkpoint
) -> None:
    mysql.execute(f"CREATE TABLE t ({COLUMNS}) CHARACTER SET utf8mb4", database=database)
    _insert(mysql, database, [ROWS[2]])
    change = next(rows_of(capture(settings, here), "t"))
    schema = change.table
    types = {c.name: c.mysql_type for c in schema.columns}
    assert types["id"] == "int unsigned"
    assert types["ti"] == "tinyint" and types["biu"] == "bigint unsigned"
    assert types["d"] == "decimal(10,2)" and types["du"] == "decimal(30,10) unsigned"
    assert types["v"] == "varchar(40)" and types["c"] == "char(5)" and types["bn"] == "binary(4)"
    assert types["e"] == "enum('a','b','c d')" and types["st"] == "set('x','y','z')"
    assert types["b10"] == "bit(10)" and types["dtt6"] == "datetime(6)" and types["ts"] == "timestamp(3)"
    assert types["j"] == "json" and types["y"] == "year" and types["tx"] == "text"
    assert schema.primary_key == ("id",)
    assert schema.unique_keys == (("v",),)
    assert schema.column("id").nullable is False and schema.column("v").nullable is True
    assert schema.column("v").charset == "utf8mb4" and schema.column("bl").is_binary
    assert schema.column("e").elements == ("a", "b", "c d")
    assert schema.column("iu").unsigned and not schema.column("i").unsigned
