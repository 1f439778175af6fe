"""Changefeed throughput, latency and memory, side by side in one run (MariaDB -> bundled broker).

    .venv/bin/python bench/changefeed.py [--rows 50000] [--table sysbench --table wide] [--live-seconds 5]
                                         [--live-rate 2000] [--big-txn 1000000] [--profile]

Per table (the sysbench-like `sbtest`: id, k, c CHAR(120), pad CHAR(60); and `wide`: 30 columns of mixed
types), rows are written first, then read back:
- capture only: binlog -> typed RowChanges (no encoding, no broker)
- encode only: canal-JSON encoding of those RowChanges (in memory)
- end to end: the changefeed runner, capture -> encode -> route -> bundled broker, until every
  message is acknowledged and the checkpoint reaches the last commit; twice, same binlog: with capture in
  the runner's process (`capture_process=False`) and in a child process of its own (the default)
- live latency: a writer (a process of its own) commits 10-row transactions at a steady rate while the changefeed runs;
  latency is commit (client side, after COMMIT returns) -> checkpoint covering it (all acked).
- RSS: peak resident memory of this process during the end-to-end run, and its growth over the start.
- CPU per row: this process's and its finished children's (the capture process), and, for the end-to-end
  runs, MariaDB's and the broker's meanwhile (/proc/PID/stat); with the rate the machine's cores could give
  at that total cost if all were busy all the time (what a goal in rows/s needs: docs/benchmarks.md).
- --big-txn N: one transaction of N narrow rows end to end with a small memory-quota; peak RSS growth
  says whether memory stays bounded by the quota rather than growing with the transaction.
"""

from __future__ import annotations

import cProfile
import gc
import multiprocessing
import os
import pstats
import random
import resource
import statistics
import string
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._many_partitions import pids_whose_command_line_has, process_cpu_seconds
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


def _sbtest_row(i: int) -> tuple[object, ...]:
    return (i, random.randint(1, 10**6), _text(120), _text(60))


_WIDE_COLUMNS = (
    "id INT PRIMARY KEY, k INT NOT NULL, b BIGINT UNSIGNED, s SMALLINT, t TINYINT, m MEDIUMINT,"
    " d1 DECIMAL(12,2), d2 DECIMAL(20,6), f FLOAT, g DOUBLE, dt DATETIME(3), ts TIMESTAMP(6) NULL, dd DATE,"
    " tm TIME, yr YEAR, c CHAR(20), v1 VARCHAR(100), v2 VARCHAR(255), v3 VARCHAR(40), v4 VARCHAR(40),"
    " tx TEXT, bn VARBINARY(32), en ENUM('a','b','c'), st SET('x','y','z'), js JSON, bt BIT(8),"
    " n1 INT NULL, n2 VARCHAR(20) NULL, u INT UNSIGNED, bo BOOLEAN"
)


def _wide_row(i: int) -> tuple[object, ...]:
    r = random.random
    return (
        i, random.randint(1, 10**6), random.randint(0, 2**63), random.randint(-30000, 30000), random.randint(-100, 100),
        random.randint(0, 8_000_000), f"{r() * 1e8:.2f}", f"{r() * 1e12:.6f}", r(), r() * 1e6,
        "2026-11-23 10:11:12.345", "2026-11-23 10:11:12.123456", "2026-11-23", "12:34:56", 2026, _text(20),
        _text(80), _text(200), _text(30), _text(30), _text(300), os.urandom(16), "b", "x,z",
        f'{{"k": {i}, "tags": ["a", "b"]}}', 5, None, None, random.randint(0, 2**32 - 1), i % 2,
    )  # fmt: skip


@dataclass(frozen=True)
class Table:
    name: str
    create: str
    row: Callable[[int], tuple[object, ...]]

    @property
    def insert(self) -> str:
        width = len(self.row(0))
        return f"INSERT INTO {self.name} VALUES ({', '.join(['%s'] * width)})"


TABLES = {
    "sysbench": Table(
        "sbtest",
        "CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL, pad CHAR(60) NOT NULL)",
        _sbtest_row,
    ),
    "wide": Table("wide", f"CREATE TABLE wide ({_WIDE_COLUMNS})", _wide_row),
}


def _load(mysql: MySQLServer, table: Table, first: int, rows: int, per_txn: int = 100) -> None:
    with mysql.connect(DATABASE, autocommit=False) as conn, conn.cursor() as cur:
        for start in range(first, first + rows, per_txn):
            cur.executemany(table.insert, [table.row(i) for i in range(start, min(start + per_txn, first + rows))])
            conn.commit()


def _rss_kib() -> int:
    """Resident memory of this process and of its live children (the capture process)."""
    total = 0
    children: list[str] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            children += (task / "children").read_text().split()
        except FileNotFoundError:
            continue  # a thread that ended after the listing (seen with --profile)
    for pid in ["self", *children]:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            continue  # a child that just ended
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total


class PeakRss:
    """Samples the resident memory of this process and its capture child every 20 ms (a context manager)."""

    def __init__(self) -> None:
        self.start = self.peak = _rss_kib()
        self.first_ack_s = 0.0  # start -> first acknowledged checkpoint (the run's set-up; set by _end_to_end)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, _rss_kib())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join()


def _options(blocking: bool) -> CaptureOptions:
    return CaptureOptions(
        server_id=random.randint(10_000, 2**31),
        snapshot_mode="never",
        blocking=blocking,
        change_filter=ChangeFilter(TableFilter([f"{DATABASE}.*"])),
    )


def _spec(settings: ConnectionSettings, broker: OwnBroker, start: Checkpoint, **kw: object) -> ChangefeedSpec:
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    return ChangefeedSpec(
        topic, settings, broker.uri(topic, partition_num=3), capture=_options(bool(kw.pop("blocking", False))),
        start=start, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def _cpu_s() -> float:
    """CPU seconds of this process (every thread, librdkafka's too) and of its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass(frozen=True)
class Timing:
    """Wall seconds (what throughput is) and CPU seconds (what the work costs: steadier than wall time
    on a shared machine, since waiting for a core is not counted)."""

    wall_s: float
    cpu_s: float
    services_cpu_s: float = 0.0  # MariaDB's and the broker's CPU meanwhile (end to end only)


class Timer:
    """Times a block; `services` are the pids of the processes it drives (MariaDB, the broker), whose CPU
    (/proc/PID/stat, every thread) it reports apart: the changefeed shares the machine's cores with them."""

    def __init__(self, services: tuple[int, ...] = ()) -> None:
        self._services = services

    def _services_cpu_s(self) -> float:
        return sum(process_cpu_seconds(pid) for pid in self._services)

    def __enter__(self) -> Timer:
        self._wall, self._cpu, self._others = time.perf_counter(), _cpu_s(), self._services_cpu_s()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.timing = Timing(time.perf_counter() - self._wall, _cpu_s() - self._cpu,
                             self._services_cpu_s() - self._others)


def _capture_only(settings: ConnectionSettings, start: Checkpoint) -> tuple[list[RowChange], Timing]:
    source = CaptureSource(settings, _options(False), start=start)
    with Timer() as timer:
        rows = [e for e in source.events() if isinstance(e, RowChange)]
    source.close()
    return rows, timer.timing


def _encode_only(rows: list[RowChange]) -> Timing:
    encoder = CanalJsonEncoder()
    with Timer() as timer:
        for row in rows:
            encoder.encode_row(row)
    return timer.timing


def _end_to_end(
    settings: ConnectionSettings,
    broker: OwnBroker,
    start: Checkpoint,
    target: Position,
    profiler: cProfile.Profile | None,
    memory_quota: int = 64 * 1024 * 1024,
    capture_process: bool = True,
    services: tuple[int, ...] = (),
) -> tuple[int, Timing, PeakRss]:
    feed = Changefeed(_spec(settings, broker, start, target=target, memory_quota=memory_quota,
                            capture_process=capture_process))
    feed.create()
    gc.collect()
    with PeakRss() as rss, Timer(services) as timer:
        if profiler is not None:  # run the changefeed's loop in this thread so cProfile sees it
            profiler.runcall(feed._run)
        else:
            feed.start()
            began = time.perf_counter()
            while ((checkpoint := feed.checkpoint) is None or checkpoint.position == start.position) \
                    and feed.state in ("created", "running"):
                time.sleep(0.001)
            rss.first_ack_s = time.perf_counter() - began
            feed.wait(1800)
    if feed.state != "finished":
        raise SystemExit(f"end to end run did not finish: {feed.state} {feed.error}")
    return feed.rows, timer.timing, rss


def _write_paced(mysql: MySQLServer, table_key: str, seconds: float, rate: int,
                 first: int) -> list[tuple[float, tuple[int, int]]]:
    """Commit 10-row transactions at `rate` rows/s; each commit's time (`perf_counter`: CLOCK_MONOTONIC, the same
    clock in every process of the machine) and binlog position. Run in a process of its own (`_write_elsewhere`)."""
    table = TABLES[table_key]
    commits: list[tuple[float, tuple[int, int]]] = []
    per_txn = 10
    interval = per_txn / rate
    with mysql.connect(DATABASE, autocommit=False) as conn, conn.cursor() as cur:
        version = server_version(cur)  # once: the loop below times each commit
        next_at = time.perf_counter()
        i = first
        end = next_at + seconds
        while time.perf_counter() < end:
            cur.executemany(table.insert, [table.row(j) for j in range(i, i + per_txn)])
            conn.commit()
            committed = time.perf_counter()
            status = binlog_status(cur, version)
            assert status is not None
            commits.append((committed, Position(status.file, status.pos).sort_key))
            i += per_txn
            next_at += interval
            time.sleep(max(0.0, next_at - time.perf_counter()))
    return commits


def _write_elsewhere(mysql: MySQLServer, table: Table, seconds: float, rate: int,
                     first: int) -> list[tuple[float, tuple[int, int]]]:
    """`_write_paced` in a new process, as the application writing to MySQL is never the changefeed's process:
    in this one, making 200 wide rows a second and sending them took the GIL from the changefeed it measures."""
    table_key = next(key for key, known in TABLES.items() if known == table)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        commits: list[tuple[float, tuple[int, int]]] = pool.apply(
            _write_paced, (mysql, table_key, seconds, rate, first))
    return commits


def _live(
    mysql: MySQLServer,
    table: Table,
    settings: ConnectionSettings,
    broker: OwnBroker,
    seconds: float,
    rate: int,
    first: int,
    capture_process: bool = True,
) -> list[float]:
    start = Checkpoint(start_position(settings), 0)
    feed = Changefeed(_spec(settings, broker, start, blocking=True, checkpoint_interval_s=1.0,
                            capture_process=capture_process))
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
        # Latency is the steady state's: the clock starts once one transaction went through (a new attempt's
        # set-up, the capture process's spawn included, is the end-to-end run's "first ack").
        mysql.execute("CREATE TABLE IF NOT EXISTS warm_up (id INT AUTO_INCREMENT PRIMARY KEY)",
                      "INSERT INTO warm_up VALUES ()", database=DATABASE)
        warm = start_position(settings).sort_key
        deadline = time.perf_counter() + 30
        while (not acked or acked[-1][1] < warm) and time.perf_counter() < deadline:
            time.sleep(0.001)
        commits = _write_elsewhere(mysql, table, seconds, rate, first)
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


@dataclass(frozen=True)
class Result:
    table: str
    rows: int
    capture: Timing
    encode: Timing
    delivered: int
    e2e: Timing
    rss: PeakRss
    latencies: list[float]
    one_process: Timing  # end to end with capture in the runner's process (capture_process=False)
    one_process_rss: PeakRss
    one_process_latencies: list[float]


def _service_pids(mysql: MySQLServer, broker: OwnBroker) -> tuple[int, ...]:
    """MariaDB's and the broker's processes (their CPU is reported beside the changefeed's). The server is
    found by the `--port=` of its command line: one started by lakefeed_testing (a MYSQL_URL or container
    server is not on this machine's process table, and is left out)."""
    pids = [broker.process.pid] if broker.process is not None else []
    return tuple(dict.fromkeys([*pids, *pids_whose_command_line_has(f"--port={mysql.port}\0")]))


def _run_table(
    mysql: MySQLServer,
    settings: ConnectionSettings,
    broker: OwnBroker,
    table: Table,
    rows: int,
    live_seconds: float,
    live_rate: int,
    profiler: cProfile.Profile | None,
) -> Result:
    mysql.execute(table.create, database=DATABASE)
    start = Checkpoint(start_position(settings), 0)
    _load(mysql, table, 0, rows)
    target = start_position(settings)
    captured, capture = _capture_only(settings, start)
    encode = _encode_only(captured)
    count = len(captured)
    del captured
    services = _service_pids(mysql, broker)
    delivered_one, one, one_rss = _end_to_end(settings, broker, start, target, None, capture_process=False,
                                              services=services)
    delivered, e2e, rss = _end_to_end(settings, broker, start, target, profiler, services=services)
    if delivered_one != delivered:
        raise SystemExit(f"the two end-to-end runs delivered {delivered_one} and {delivered} rows")
    latencies, one_latencies = [], []
    if live_seconds:
        one_latencies = _live(mysql, table, settings, broker, live_seconds, live_rate, rows, capture_process=False)
        latencies = _live(mysql, table, settings, broker, live_seconds, live_rate, rows + 10**7)
    return Result(table.name, count, capture, encode, delivered, e2e, rss, latencies, one, one_rss, one_latencies)


def _big_transaction(mysql: MySQLServer, settings: ConnectionSettings, broker: OwnBroker, rows: int) -> None:
    """One transaction of `rows` narrow rows, end to end with memory-quota 8 MiB: RSS must not grow with it."""
    quota = 8 * 1024 * 1024
    mysql.execute("CREATE TABLE big (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(40) NOT NULL)", database=DATABASE)
    start = Checkpoint(start_position(settings), 0)
    with mysql.connect(DATABASE, autocommit=False) as conn, conn.cursor() as cur:
        for first in range(0, rows, 10_000):
            cur.executemany(
                "INSERT INTO big VALUES (%s, %s, %s)",
                [(i, i * 7, f"row-{i:09d}-{_text(16)}") for i in range(first, min(first + 10_000, rows))],
            )
        conn.commit()  # one transaction: the binlog holds it between one BEGIN and one COMMIT
    target = start_position(settings)
    delivered, timing, rss = _end_to_end(settings, broker, start, target, None, memory_quota=quota)
    seconds = timing.wall_s
    print(
        f"\none transaction of {rows} rows (id, k, c VARCHAR(40)), memory-quota {quota >> 20} MiB: {delivered} rows "
        f"in {seconds:.1f} s ({delivered / seconds:.0f} rows/s); RSS {rss.start >> 10} MiB at start, peak "
        f"{rss.peak >> 10} MiB (+{(rss.peak - rss.start) >> 10} MiB)"
    )


def _report(result: Result, live_rate: int, live_seconds: float) -> None:
    base = result.rows / result.capture.wall_s
    print(f"\n{result.rows} rows, table {result.table}, MariaDB -> bundled broker (3 partitions, acks=all)\n")
    print(f"{'path':42} {'rows':>8} {'seconds':>8} {'rows/s':>10} {'vs capture':>10} {'CPU us/row':>11}")
    for name, count, timing in (
        ("capture only (binlog -> RowChange)", result.rows, result.capture),
        ("canal-JSON encode only", result.rows, result.encode),
        ("end to end, one process", result.delivered, result.one_process),
        ("end to end, capture in a child process", result.delivered, result.e2e),
    ):
        rate = count / timing.wall_s
        cpu = timing.cpu_s / count * 1e6
        print(f"{name:42} {count:8d} {timing.wall_s:8.2f} {rate:10.0f} {rate / base:9.2f}x {cpu:11.1f}")
    for name, rss, timing in (("one process", result.one_process_rss, result.one_process),
                              ("capture in a child", result.rss, result.e2e)):
        streaming = result.delivered / (timing.wall_s - rss.first_ack_s)
        print(f"end to end, {name}: first acknowledgement after {rss.first_ack_s:.2f} s, then {streaming:.0f} rows/s")
    for name, timing in (("one process", result.one_process), ("capture in a child", result.e2e)):
        own, services = timing.cpu_s / result.delivered * 1e6, timing.services_cpu_s / result.delivered * 1e6
        # What two cores could do at this cost per row, were every part perfectly parallel: a ceiling.
        ceiling = (os.cpu_count() or 1) / (own + services) * 1e6 if own + services else 0.0
        print(f"end to end, {name}: CPU per row: changefeed {own:.1f} us + MariaDB and broker {services:.1f} us"
              f" = {own + services:.1f} us; {os.cpu_count()} cores fully used would give at most {ceiling:,.0f} rows/s")
    for name, rss in (("one process", result.one_process_rss), ("capture in a child", result.rss)):
        growth = (rss.peak - rss.start) >> 10
        print(f"end-to-end RSS, {name}: {rss.start >> 10} MiB at start, peak {rss.peak >> 10} MiB (+{growth} MiB)")
    for name, latencies in (("one process", result.one_process_latencies), ("capture in a child", result.latencies)):
        if latencies:
            q = statistics.quantiles(latencies, n=100, method="inclusive")  # never past the max
            print(
                f"live, {name}: {live_rate} rows/s for {live_seconds:.0f} s in 10-row transactions, {len(latencies)} "
                f"commits; commit -> acknowledged checkpoint: p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, "
                f"max {max(latencies):.1f} ms"
            )


@click.command()
@click.option("--rows", default=50_000, show_default=True, help="rows to preload for the throughput runs")
@click.option(
    "--table",
    "tables",
    type=click.Choice(sorted(TABLES)),
    multiple=True,
    help="table(s) to run (default: sysbench and wide)",
)
@click.option("--live-seconds", default=5.0, show_default=True, help="0 skips the live latency run")
@click.option("--live-rate", default=2000, show_default=True, help="rows/s written during the live run")
@click.option("--big-txn", default=0, show_default=True, help="also run one transaction of this many rows")
@click.option("--profile", is_flag=True, help="profile the end-to-end run and print the hottest functions")
def main(rows: int, tables: tuple[str, ...], live_seconds: float, live_rate: int, big_txn: int, profile: bool) -> None:
    with mysql_server() as mysql, tempfile.TemporaryDirectory() as tmp:
        broker = OwnBroker(Path(tmp))
        broker.start()
        results = []
        profiler = cProfile.Profile() if profile else None
        try:
            settings = ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)
            mysql.execute(f"DROP DATABASE IF EXISTS {DATABASE}", f"CREATE DATABASE {DATABASE}")
            for name in tables or ("sysbench", "wide"):
                results.append(
                    _run_table(mysql, settings, broker, TABLES[name], rows, live_seconds, live_rate, profiler)
                )
                _report(results[-1], live_rate, live_seconds)
            if big_txn:
                _big_transaction(mysql, settings, broker, big_txn)
        finally:
            broker.stop()
    if profiler:
        print(
            "\nhottest functions of the end-to-end runs (the changefeed loop run in this thread; the producer poll"
            " thread is not included; profiling slows the end-to-end row above):"
        )
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
