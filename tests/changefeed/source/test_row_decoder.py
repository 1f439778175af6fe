"""The one-pass row decoder gives exactly what python-mysql-replication gives, on a real server's binlog.

Each test writes rows, then reads the same binlog slice twice: once with the library decoding every
row (`event.rows`), once through `RowsDecoder`, and compares the decoded rows, including the library's
none_sources where the mounter reads them (tables with a SET column).
"""

from __future__ import annotations

import datetime
import random
import string
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from changefeed.model import Position
from changefeed.source import row_image
from changefeed.source.binlog_reader import BinlogReader
from changefeed.source.capture import start_position
from changefeed.source.records import RowsRecord
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer

EVERY_TYPE = """
  id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  f FLOAT, db DOUBLE, d DECIMAL(12,3), d0 DECIMAL(5,0) UNSIGNED, dl DECIMAL(65,30), df DECIMAL(3,3), y YEAR,
  dt DATE, dtt DATETIME(6), dt0 DATETIME, dt1 DATETIME(1), ts TIMESTAMP(3) NULL, ts5 TIMESTAMP(5) NULL,
  ts0 TIMESTAMP NULL, tm TIME(2),
  c CHAR(3), cw CHAR(100), v VARCHAR(40), vw VARCHAR(300), l1 VARCHAR(20) CHARACTER SET latin1,
  a VARCHAR(20) CHARACTER SET ascii, tt TINYTEXT, tx TEXT, mt MEDIUMTEXT,
  bn BINARY(4), vb VARBINARY(300), tb TINYBLOB, bl BLOB, e ENUM('a','b','c d'), st SET('x','y','z'),
  b BIT(10), j JSON, tm0 TIME, tm6 TIME(6), tm3 TIME(3), b1 BIT(1), b64 BIT(64),
  sw SET('a','b','c','d','e','f','g','h','i','j')
"""

_ALPHABET = string.ascii_letters + string.digits + " 'é☃😀\\\"\n"


def _text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, most)))


def _maybe(rng: random.Random, make: Callable[[], Any]) -> Any:
    return None if rng.random() < 0.15 else make()


def _row(rng: random.Random, key: int) -> tuple[Any, ...]:
    m = _maybe
    r = rng
    return (
        key, m(r, lambda: r.randint(-128, 127)), m(r, lambda: r.randint(0, 255)),
        m(r, lambda: r.randint(-(2**15), 2**15 - 1)), m(r, lambda: r.randint(0, 2**16 - 1)),
        m(r, lambda: r.randint(-(2**23), 2**23 - 1)), m(r, lambda: r.randint(0, 2**24 - 1)),
        m(r, lambda: r.randint(-(2**31), 2**31 - 1)), m(r, lambda: r.randint(0, 2**32 - 1)),
        m(r, lambda: r.randint(-(2**63), 2**63 - 1)), m(r, lambda: r.randint(0, 2**64 - 1)),
        m(r, lambda: r.uniform(-1e30, 1e30)), m(r, lambda: r.uniform(-1e300, 1e300)),
        m(r, lambda: Decimal(r.randint(-(10**12) + 1, 10**12 - 1)).scaleb(-3)), m(r, lambda: r.randint(0, 99999)),
        m(r, lambda: Decimal(r.randint(-(10**65) + 1, 10**65 - 1)).scaleb(-30)),
        m(r, lambda: Decimal(r.randint(-999, 999)).scaleb(-3)), m(r, lambda: r.choice([0, 1901, 2155])),
        m(r, lambda: r.choice(["0000-00-00", "2024-00-10", "2024-02-00"]) if r.random() < 0.1
          else datetime.date(r.randint(1, 9999), r.randint(1, 12), r.randint(1, 28))),
        m(r, lambda: datetime.datetime(r.randint(1000, 9999), 1, 2, 3, 4, 5, r.randint(0, 999999))),
        m(r, lambda: "0000-00-00 00:00:00" if r.random() < 0.1 else datetime.datetime(r.randint(1000, 9999), 12, 31)),
        m(r, lambda: datetime.datetime(1970, 1, 1, 0, 0, 0, r.choice([0, 100000, 900000]))),
        m(r, lambda: datetime.datetime(2020, 5, 6, 7, 8, 9, 123000)),
        m(r, lambda: datetime.datetime(r.randint(1970, 2037), 5, 6, 7, 8, 9, r.randint(0, 99999) * 10)),
        m(r, lambda: "0000-00-00 00:00:00" if r.random() < 0.2 else datetime.datetime(r.randint(1971, 2037), 1, 1)),
        m(r, lambda: f"-{r.randint(0, 838)}:01:02.5"),
        m(r, lambda: _text(r, 3)), m(r, lambda: _text(r, 100)), m(r, lambda: _text(r, 40)),
        m(r, lambda: _text(r, 300)), m(r, lambda: "".join(r.choice("aé¤ü") for _ in range(r.randint(0, 20)))),
        m(r, lambda: "".join(r.choice(string.printable) for _ in range(r.randint(0, 20)))),
        m(r, lambda: _text(r, 60)), m(r, lambda: _text(r, 400)),
        m(r, lambda: _text(r, 70_000 if r.random() < 0.05 else 500)),
        m(r, lambda: bytes(r.getrandbits(8) for _ in range(r.randint(0, 4)))),
        m(r, lambda: bytes(r.getrandbits(8) for _ in range(r.randint(0, 300)))),
        m(r, lambda: bytes(r.getrandbits(8) for _ in range(r.randint(0, 200)))),
        m(r, lambda: bytes(r.getrandbits(8) for _ in range(r.randint(0, 1000)))),
        m(r, lambda: r.choice(["a", "b", "c d"])), m(r, lambda: r.choice(["", "x", "y,z", "x,y,z"])),
        m(r, lambda: r.randint(0, 1023)), m(r, lambda: f'{{"k": {r.randint(0, 9)}, "s": "{r.choice("ab")}"}}'),
        m(r, lambda: f"{r.choice('-')}{r.randint(0, 838)}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"),
        m(r, lambda: f"{r.choice(['-', ''])}{r.randint(0, 838)}:59:59.{r.randint(0, 999999):06d}"),
        m(r, lambda: f"{r.choice(['-', ''])}00:00:{r.randint(0, 1):02d}.{r.choice([0, 1, 999, 500])}"),
        m(r, lambda: r.randint(0, 1)), m(r, lambda: r.choice([0, 1, 2**63, 2**64 - 1, r.getrandbits(64)])),
        m(r, lambda: ",".join(sorted(r.sample("abcdefghij", r.randint(0, 10))))),
    )  # fmt: skip


def _read(settings: ConnectionSettings, start: Position, table: str, *, fast: bool) -> tuple[list[Any], int]:
    """The rows of `table` from `start` to the binlog's end, and how many events the decoder took."""
    reader = BinlogReader(settings, start, is_mariadb=True, server_id=random.randint(10_000, 2**31), blocking=False)
    taken = 0
    decode = reader._rows.rows

    def rows(event: Any) -> list[dict[str, Any]] | None:
        nonlocal taken
        if not fast:
            return None
        found = decode(event)
        taken += found is not None
        return found

    reader._rows.rows = rows  # type: ignore[method-assign]
    found: list[Any] = []
    for record in reader:
        if isinstance(record, RowsRecord) and record.table == table:
            found.append((record.kind, record.rows))
    return found, taken


def _same_as_the_library(settings: ConnectionSettings, start: Position, table: str, *, has_sets: bool) -> int:
    library, _ = _read(settings, start, table, fast=False)
    fast, taken = _read(settings, start, table, fast=True)
    assert library, "the workload wrote no rows"
    assert len(fast) == len(library)
    for (kind, ours), (library_kind, theirs) in zip(fast, library, strict=True):
        assert kind == library_kind
        for row, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
            if not has_sets:  # none_sources matter to the mounter only for SET columns
                reference = {part: v for part, v in reference.items() if "none_sources" not in part}
            assert set(mine) == set(reference)
            for part in reference:
                differ = {k: (v, reference[part][k]) for k, v in mine[part].items() if v != reference[part][k]}
                assert not differ, f"row {row} {part}: ours vs the library's {differ}"
            assert mine == reference
    return taken


@pytest.mark.parametrize("seed", [1, 2])
def test_every_column_type_decodes_as_the_library_does(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, seed: int
) -> None:
    rng = random.Random(seed)
    mysql.execute(f"CREATE TABLE every ({EVERY_TYPE})", database=database)
    start = start_position(settings)
    placeholders = ", ".join(["%s"] * len(_row(rng, 0)))
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        # Zero and partly zero dates are stored as they are only outside strict mode.
        cur.execute("SET sql_mode = 'ALLOW_INVALID_DATES'")
        for batch in range(6):
            keys = range(batch * 40, batch * 40 + 40)
            cur.executemany(f"INSERT INTO every VALUES ({placeholders})", [_row(rng, k) for k in keys])
            changed = rng.sample(list(keys), 15)
            for key in changed[:10]:
                cur.execute(f"REPLACE INTO every VALUES ({placeholders})", _row(rng, key))
            for key in changed[10:]:
                cur.execute("UPDATE every SET v = %s, j = NULL, st = '' WHERE id = %s", (_text(rng, 40), key))
            cur.execute("DELETE FROM every WHERE id %% 7 = %s", (batch,))
        cur.execute("SELECT COUNT(*) FROM every WHERE dt = '0000-00-00' OR MONTH(dt) = 0 OR dt0 = 0 OR ts0 = 0")
        assert cur.fetchone()[0] > 0, "the workload should store zero dates, which only the library reads"
    assert _same_as_the_library(settings, start, "every", has_sets=True) > 0


def test_a_table_of_fixed_and_string_columns_only_is_decoded_without_the_library(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    """The sysbench-like table: every column has its own reader, no value goes through the library."""
    mysql.execute("CREATE TABLE sb (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60))",
                  database=database)
    start = start_position(settings)
    rng = random.Random(3)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO sb VALUES (%s, %s, %s, %s)",
                        [(i, rng.randint(0, 10**6), _text(rng, 120), _maybe(rng, lambda: _text(rng, 60)))
                         for i in range(500)])
        cur.execute("UPDATE sb SET k = k + 1 WHERE id < 100")
        cur.execute("DELETE FROM sb WHERE id >= 400")
    original = row_image.library_value  # bound into each image reader when it is compiled
    calls = 0

    def counted(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(*args)

    row_image.library_value = counted  # type: ignore[assignment]
    try:
        assert _same_as_the_library(settings, start, "sb", has_sets=False) >= 3
    finally:
        row_image.library_value = original
    assert calls == 0


def test_a_partial_row_image_is_left_to_the_library(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE p (id INT PRIMARY KEY, a INT, b TEXT)", database=database)
    start = start_position(settings)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION binlog_row_image = 'MINIMAL'")
        cur.execute("INSERT INTO p VALUES (1, 2, 'x'), (2, 3, NULL)")
        cur.execute("UPDATE p SET a = 9 WHERE id = 1")
    library, _ = _read(settings, start, "p", fast=False)
    fast, taken = _read(settings, start, "p", fast=True)
    assert [kind for kind, _ in fast] == [kind for kind, _ in library]
    assert [[row.get("values", row.get("after_values")) for row in rows] for _, rows in fast] == [
        [row.get("values", row.get("after_values")) for row in rows] for _, rows in library]
    assert taken < len(library)  # the MINIMAL update image went to the library
