"""Changefeed throughput and latency, side by side in one run (MariaDB -> bundled broker).

    .venv/bin/python bench/changefeed.py [--rows 50000] [--live-seconds 5] [--live-rate 2000] [--profile]

Rows of a sysbench-like table (id, k, c CHAR(120), pad CHAR(60)) are written first, then read back:
- capture only: binlog -> typed RowChanges (no encoding, no broker)
- encode only: canal-JSON encoding of those RowChanges (in memory)
- end to end: the changefeed runner, capture -> encode -> route -> bundled broker, until every
  message is acknowledged and the checkpoint reaches the last commit
- live latency: a writer commits 10-row transactions at a steady rate while the changefeed runs;
  latency is commit (client side, after COMMIT returns) -> checkpoint covering it (all acked).
"""

from __future__ import annotations

import cProfile
import pstats
import random
import statistics
import string
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from changefeed.codec.canal_json import CanalJsonEncoder
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint, Position, RowChange
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import CaptureOptions, CaptureSource, start_position
from changefeed.source.server import ConnectionSettings
from changefeed.source.server_version import binlog_status, server_version
from lakefeed_testing.mysql import MySQLServer, mysql_server
from lakefeed_testing.own_broker import OwnBroker

DATABASE = "bench_cf"


def _text(n: int) -> str:
    return "".join(random.choices(string.ascii_letters + string.digits + "-", k=n))


def _load(mysql: MySQLServer, first: int, rows: int, per_txn: int = 100) -> None:
    with mysql.connect(DATABASE, autocommit=False) as conn, conn.cursor() as cur:
        for start in range(first, first + rows, per_txn):
            cur.executemany(
                "INSERT INTO sbtest VALUES (%s, %s, %s, %s)",
                [(i, random.randint(1, 10**6), _text(120), _text(60)) for i in range(start, start + per_txn)],
            )
            conn.commit()


def _options(blocking: bool) -> CaptureOptions:
    return CaptureOptions(
        server_id=random.randint(10_000, 2**31),
        snapshot_mode="never",
        blocking=blocking,
        change_filter=ChangeFilter(TableFilter([f"{DATABASE}.sbtest"])),
    )


def _spec(settings: ConnectionSettings, broker: OwnBroker, start: Checkpoint, **kw: object) -> ChangefeedSpec:
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    return ChangefeedSpec(
        topic, settings, broker.uri(topic, partition_num=3), capture=_options(bool(kw.pop("blocking", False))),
        start=start, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def _capture_only(settings: ConnectionSettings, start: Checkpoint) -> tuple[list[RowChange], float]:
    source = CaptureSource(settings, _options(False), start=start)
    began = time.perf_counter()
    rows = [e for e in source.events() if isinstance(e, RowChange)]
    elapsed = time.perf_counter() - began
    source.close()
    return rows, elapsed


def _encode_only(rows: list[RowChange]) -> float:
    encoder = CanalJsonEncoder()
    began = time.perf_counter()
    for row in rows:
        encoder.encode_row(row)
    return time.perf_counter() - began


def _end_to_end(
    settings: ConnectionSettings,
    broker: OwnBroker,
    start: Checkpoint,
    target: Position,
    profiler: cProfile.Profile | None,
) -> tuple[int, float]:
    feed = Changefeed(_spec(settings, broker, start, target=target))
    feed.create()
    began = time.perf_counter()
    if profiler is not None:  # run the changefeed's loop in this thread so cProfile sees it
        profiler.runcall(feed._run)
    else:
        feed.start()
        feed.wait(600)
    if feed.state != "finished":
        raise SystemExit(f"end to end run did not finish: {feed.state} {feed.error}")
    return feed.rows, time.perf_counter() - began


def _write_paced(
    mysql: MySQLServer, seconds: float, rate: int, first: int, commits: list[tuple[float, tuple[int, int]]]
) -> None:
    per_txn = 10
    interval = per_txn / rate
    with mysql.connect(DATABASE, autocommit=False) as conn, conn.cursor() as cur:
        version = server_version(cur)  # once: the loop below times each commit
        next_at = time.perf_counter()
        i = first
        end = next_at + seconds
        while time.perf_counter() < end:
            cur.executemany(
                "INSERT INTO sbtest VALUES (%s, %s, %s, %s)",
                [(j, random.randint(1, 10**6), _text(120), _text(60)) for j in range(i, i + per_txn)],
            )
            conn.commit()
            committed = time.perf_counter()
            status = binlog_status(cur, version)
            assert status is not None
            commits.append((committed, Position(status.file, status.pos).sort_key))
            i += per_txn
            next_at += interval
            time.sleep(max(0.0, next_at - time.perf_counter()))


def _live(
    mysql: MySQLServer, settings: ConnectionSettings, broker: OwnBroker, seconds: float, rate: int, first: int
) -> list[float]:
    start = Checkpoint(start_position(settings), 0)
    feed = Changefeed(_spec(settings, broker, start, blocking=True, checkpoint_interval_s=1.0))
    feed.create()
    feed.start()
    acked: list[tuple[float, tuple[int, int]]] = []
    done = threading.Event()

    def watch() -> None:  # when did the checkpoint pass each position
        last = None
        while not done.is_set():
            checkpoint = feed.checkpoint
            if checkpoint is not None and checkpoint != last:
                acked.append((time.perf_counter(), checkpoint.position.sort_key))
                last = checkpoint
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    commits: list[tuple[float, tuple[int, int]]] = []
    try:
        _write_paced(mysql, seconds, rate, first, commits)
        deadline = time.perf_counter() + 30
        while (not acked or acked[-1][1] < commits[-1][1]) and time.perf_counter() < deadline:
            time.sleep(0.01)
    finally:
        done.set()
        watcher.join()
        feed.remove()
    latencies = []
    k = 0
    for committed, position in commits:
        while k < len(acked) and acked[k][1] < position:
            k += 1
        if k == len(acked):
            raise SystemExit("live run: some commits were never acknowledged")
        latencies.append(max(0.0, acked[k][0] - committed) * 1000)
    return latencies


@click.command()
@click.option("--rows", default=50_000, show_default=True, help="rows to preload for the throughput runs")
@click.option("--live-seconds", default=5.0, show_default=True)
@click.option("--live-rate", default=2000, show_default=True, help="rows/s written during the live run")
@click.option("--profile", is_flag=True, help="profile the end-to-end run and print the hottest functions")
def main(rows: int, live_seconds: float, live_rate: int, profile: bool) -> None:
    with mysql_server() as mysql, tempfile.TemporaryDirectory() as tmp:
        broker = OwnBroker(Path(tmp))
        broker.start()
        try:
            settings = ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)
            mysql.execute(f"DROP DATABASE IF EXISTS {DATABASE}", f"CREATE DATABASE {DATABASE}")
            mysql.execute(
                "CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
                database=DATABASE,
            )
            start = Checkpoint(start_position(settings), 0)
            _load(mysql, 0, rows)
            target = start_position(settings)

            captured, capture_s = _capture_only(settings, start)
            encode_s = _encode_only(captured)
            profiler = cProfile.Profile() if profile else None
            delivered, e2e_s = _end_to_end(settings, broker, start, target, profiler)
            latencies = _live(mysql, settings, broker, live_seconds, live_rate, rows)
        finally:
            broker.stop()

    base = len(captured) / capture_s
    table = [
        ("capture only (binlog -> RowChange)", len(captured), capture_s),
        ("canal-JSON encode only", len(captured), encode_s),
        ("end to end (-> bundled broker, acked)", delivered, e2e_s),
    ]
    print(f"\n{rows} rows, sysbench-like table, MariaDB -> bundled broker (3 partitions, acks=all)\n")
    print(f"{'path':42} {'rows':>8} {'seconds':>8} {'rows/s':>10} {'vs capture':>10}")
    for name, count, seconds in table:
        rate = count / seconds
        print(f"{name:42} {count:8d} {seconds:8.2f} {rate:10.0f} {rate / base:9.2f}x")
    q = statistics.quantiles(latencies, n=100)
    print(
        f"\nlive: {live_rate} rows/s for {live_seconds:.0f} s in 10-row transactions, {len(latencies)} commits; "
        f"commit -> acknowledged checkpoint: p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, max {max(latencies):.1f} ms"
    )
    if profiler:
        print(
            "\nhottest functions of the end-to-end run (the changefeed loop run in this thread; the producer poll"
            " thread is not included; profiling slows the end-to-end row above):"
        )
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
