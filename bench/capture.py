"""Capture throughput: binlog -> model objects, side by side with plain python-mysql-replication.

Both read the same binlog of a sysbench-like table (`sbtest1`: id, k, c CHAR(120), pad CHAR(60)) from
a private MariaDB, several rounds each, alternating so machine noise hits both alike:

- library: `BinLogStreamReader` iterating every row event and touching each row's values;
- capture: `CaptureSource` (binlog reader + schema tracking + mounter + TSO commit clock) yielding
  RowChange / TransactionCommit objects.

    .venv/bin/python bench/capture.py [--rows 200000] [--rounds 3] [--profile]
"""

from __future__ import annotations

import cProfile
import pstats
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

# The repository first: bench/changefeed.py and bench/broker.py would shadow the packages of those names.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from changefeed.model import Checkpoint, Position, RowChange
from changefeed.source.capture import CaptureOptions, CaptureSource
from changefeed.source.server import ConnectionSettings
from changefeed.source.server_version import binlog_status
from lakefeed_testing import MySQLServer, mysql_server


def load(server: MySQLServer, rows: int) -> Position:
    server.execute("CREATE DATABASE bench")
    server.execute(
        "CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
        database="bench",
    )
    with server.connect() as conn, conn.cursor() as cur:
        status = binlog_status(cur)
        assert status is not None
        file, pos = status.file, status.pos
    rng = random.Random(1)
    with server.connect("bench", autocommit=False) as conn, conn.cursor() as cur:
        for start in range(0, rows, 1000):  # sysbench-sized transactions
            batch = [
                (i, rng.randint(1, rows), f"{rng.getrandbits(200):060d}"[:120], f"{i:060d}")
                for i in range(start, min(rows, start + 1000))
            ]
            cur.executemany("INSERT INTO sbtest1 VALUES (%s, %s, %s, %s)", batch)
            conn.commit()
    return Position(file, int(pos))


def library_rows(server: MySQLServer, start: Position) -> int:
    stream = BinLogStreamReader(
        connection_settings={"host": server.host, "port": server.port, "user": server.user, "passwd": server.password},
        server_id=random.randint(10_000, 2**31), blocking=False, log_file=start.file, log_pos=start.pos,
        resume_stream=True, only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
    )
    count = 0
    try:
        for event in stream:
            for row in event.rows:
                count += len(row["values"])
    finally:
        stream.close()
    return count


def capture_rows(server: MySQLServer, start: Position) -> int:
    settings = ConnectionSettings(server.host, server.port, server.user, server.password, tls=False)
    options = CaptureOptions(server_id=random.randint(10_000, 2**31), blocking=False, snapshot_mode="never")
    source = CaptureSource(settings, options, start=Checkpoint(start, 0))
    count = 0
    try:
        for event in source.events():
            if isinstance(event, RowChange):
                count += 1
    finally:
        source.close()
    return count


def timed(run: Callable[[], int]) -> tuple[int, float]:
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started


@click.command()
@click.option("--rows", default=200_000, show_default=True, help="Rows in the binlog.")
@click.option("--rounds", default=3, show_default=True, help="Alternating rounds per side; the best counts.")
@click.option("--profile", is_flag=True, help="Print where the capture spends its time (cProfile).")
def main(rows: int, rounds: int, profile: bool) -> None:
    with mysql_server() as server:
        click.echo(f"loading {rows} rows into a private MariaDB ...")
        start = load(server, rows)
        best: dict[str, float] = {"python-mysql-replication": float("inf"), "lakefeed capture": float("inf")}
        for _ in range(rounds):
            values, seconds = timed(lambda: library_rows(server, start))
            assert values == rows * 4, values  # four columns per row
            best["python-mysql-replication"] = min(best["python-mysql-replication"], seconds)
            count, seconds = timed(lambda: capture_rows(server, start))
            assert count == rows, count
            best["lakefeed capture"] = min(best["lakefeed capture"], seconds)
        base = rows / best["python-mysql-replication"]
        click.echo(f"\n{'reader':<28}{'rows/s':>12}{'ratio':>8}")
        for name, seconds in best.items():
            rate = rows / seconds
            click.echo(f"{name:<28}{rate:>12,.0f}{rate / base:>8.2f}")
        if profile:
            profiler = cProfile.Profile()
            profiler.runcall(capture_rows, server, start)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
