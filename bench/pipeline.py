"""Spark pipeline throughput and freshness (MariaDB -> changefeed -> bundled broker -> Spark -> Delta).

    .venv/bin/python bench/pipeline.py [--rows 50000] [--live-seconds 30] [--live-rate 200]

- materialise: the topic holds `--rows` inserts plus updates of a tenth of them; the streaming job
  (availableNow, one micro-batch) applies them to new Delta tables. Side by side in the same run: a plain
  Spark batch job that reads the same topic and appends the raw records to Delta (what Spark's Kafka
  source and Delta cost on their own, without parsing, ordering or merging). Both run twice: the first
  pair pays the JVM's class loading and JIT (the pipeline, run first, most of it), the second is warm
  (`--warm-runs N`: N warm pairs and their median ratio; the JIT goes on warming up over the first few).
  `--per-batch N` makes it a sustained catch-up: both jobs read the topic as a stream of micro-batches of at
  most N records (maxOffsetsPerTrigger, availableNow), the plain append as a streaming Delta append.
- freshness: a writer commits rows at `--live-rate` rows/s (one row per transaction up to 200 rows/s,
  then more rows per transaction, paced to a schedule so the rate holds) while the changefeed and the job
  (processing-time trigger of 1 s) run; a poller reads the Delta table's transaction log (`--poller
  spark-query`: queries the table with Spark instead) and records, for each row that became visible,
  visible time minus commit time. It also prints Spark's phases of the live micro-batches, and with
  `--heap-every S` the JVM's heap after a full GC every S seconds. `--lag-plot FILE` also draws Delta's
  lag over the run (at each poll: now minus the commit time of the newest visible row), to see whether it
  stays bounded; the rows committed but not yet visible are printed per third of the run.
- `--merge-every-seconds N`: both parts with the pipeline merge-on-read (`target.merge_every_seconds`): the
  materialise line then also gives the buffered batch alone, and its total includes the buffer's merge; the
  live run counts a row visible once its commit is in the change buffer (`BufferTail`: what `current_rows`
  reads) or in the table, and also prints the lag of the table alone (what a plain Delta read sees: it
  waits for the merges, which run back to back when one takes longer than the interval).
- `--jfr FILE`: a Java Flight Recorder profile of the Spark JVM over the live run, and the share of its CPU
  samples in code generation, Delta, Parquet and JSON parsing (bench/_jvm_profile.py).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pyarrow.parquet

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._jvm_profile import record as record_jfr
from bench._jvm_profile import sample_shares
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import CaptureOptions, start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing.mysql import MySQLServer, mysql_server
from lakefeed_testing.own_broker import SINK_LIMIT, OwnBroker
from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import Maintenance, PipelineConfig, SourceConfig
from spark_pipelines.io.change_buffer import buffer_location
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import ApplyBatch, start_query

DATABASE = "bench_pipeline"


def _settings(mysql: MySQLServer) -> ConnectionSettings:
    return ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)


def _feed(mysql: MySQLServer, uri: str, start: Checkpoint, store: Path, blocking_target: bool) -> Changefeed:
    settings = _settings(mysql)
    spec = ChangefeedSpec(
        f"bench-{uuid.uuid4().hex[:6]}", settings, uri,
        capture=CaptureOptions(server_id=random.randint(10_000, 2**31), snapshot_mode="never",
                               change_filter=ChangeFilter(TableFilter([f"{DATABASE}.*"]))),
        start=start, target=start_position(settings) if blocking_target else None,
        checkpoint_store_url=f"sqlite:///{store}",
    )
    feed = Changefeed(spec)
    feed.create()
    feed.start()
    return feed


def _load(mysql: MySQLServer, rows: int) -> None:
    mysql.execute(f"CREATE DATABASE {DATABASE}")
    mysql.execute("CREATE TABLE sbtest (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120), pad CHAR(60), "
                  "price DECIMAL(10,2))", database=DATABASE)
    with mysql.connect(DATABASE, autocommit=False) as conn, conn.cursor() as cur:
        for start in range(0, rows, 1000):
            cur.executemany("INSERT INTO sbtest VALUES (%s, %s, %s, %s, %s)",
                            [(i, i % 1000, f"c-{i:0110d}", f"pad-{i:050d}", f"{i % 9973}.25")
                             for i in range(start, min(rows, start + 1000))])
            conn.commit()
        cur.execute("UPDATE sbtest SET k = k + 1 WHERE id % 10 = 0")
        conn.commit()


def _materialise(spark: Any, bootstrap: str, topic: str, work: Path, records: int, run: str,
                 merge_every: int, per_batch: int | None = None) -> dict[str, float]:
    """Records/s of the pipeline and of the plain append over the same topic, each into new tables. With
    `per_batch`, both read it as a stream of micro-batches of at most that many records (maxOffsetsPerTrigger,
    availableNow) instead of one batch: a sustained catch-up, each side paying its per-batch cost."""
    source = SourceConfig(bootstrap, (topic,), max_offsets_per_trigger=per_batch)
    config = PipelineConfig(source, str(work / run / "delta"), str(work / run / "ckpt"),
                            merge_every_seconds=merge_every)
    batch = ApplyBatch(config)
    started = time.perf_counter()
    query = start_query(spark, read_stream(spark, config.source), config, batch=batch)
    query.awaitTermination()
    merge_s = time.perf_counter() - started
    rates = {}
    if merge_every:  # merge-on-read: the batch went to the change buffer; its merge is timed on its own
        rates["pipeline, merge-on-read: buffered"] = records / merge_s
        started = time.perf_counter()
        assert batch.merger is not None
        batch.merger.finish()
        merge_s += time.perf_counter() - started
    rates["pipeline (parse, order, MERGE)"] = records / merge_s
    started = time.perf_counter()
    if per_batch is None:
        (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .option("startingOffsets", "earliest").load()
         .write.format("delta").mode("overwrite").save(str(work / run / "raw")))
    else:
        (read_stream(spark, source).writeStream.format("delta").trigger(availableNow=True)
         .option("checkpointLocation", str(work / run / "raw-ckpt")).start(str(work / run / "raw"))
         .awaitTermination())
    append_s = time.perf_counter() - started
    return {**rates, "plain Kafka -> Delta append": records / append_s}


@dataclass(frozen=True)
class LagSample:
    """One poll of the live run: seconds since the writer started, Delta's lag (now minus the commit time
    of the newest visible row), rows committed but not yet visible."""

    at: float
    lag: float
    behind: int


class DeltaLogTail:
    """The newest `column` value visible in a Delta table, read from its transaction log without Spark.

    A Delta commit is the file `_delta_log/<version, 20 digits>.json`, written atomically; from the moment it
    exists every reader sees its rows. Each `add` action carries the file's column statistics (`stats`,
    `maxValues`), keyed by the column's physical name when column mapping is on (the `metaData` action's
    schema gives `delta.columnMapping.physicalName`). Delta protocol, "Actions" and "Column Mapping":
    https://github.com/delta-io/delta/blob/master/PROTOCOL.md

    Why not a Spark query: polling with `spark.read...agg(max)` four times a second ran one Spark job (and a
    snapshot) per poll on the same two cores and the same driver as the query being measured, which queued
    behind or in front of its jobs; reading the log costs a directory listing and a few small files."""

    def __init__(self, table: Path, column: str) -> None:
        self._log = table / "_delta_log"
        self._column = column
        self._physical = column
        self._next = 0
        self.newest: int | None = None

    def poll(self) -> int | None:
        """Read the commits written since the last poll; return the newest value visible now."""
        while (commit := self._log / f"{self._next:020d}.json").exists():
            for line in commit.read_text().splitlines():
                action = json.loads(line)
                if "metaData" in action:
                    self._physical = self._physical_name(action["metaData"]["schemaString"])
                elif "add" in action and action["add"].get("stats"):
                    top = json.loads(action["add"]["stats"]).get("maxValues", {}).get(self._physical)
                    if top is not None and (self.newest is None or top > self.newest):
                        self.newest = top
            self._next += 1
        return self.newest

    def _physical_name(self, schema: str) -> str:
        for field in json.loads(schema)["fields"]:
            if field["name"] == self._column:
                return str(field.get("metadata", {}).get("delta.columnMapping.physicalName", self._column))
        raise KeyError(f"column {self._column!r} is not in the Delta table's schema")


class BufferTail:
    """The newest `column` value of source table `table` waiting in merge-on-read's change buffer
    (io/change_buffer.py), read from the buffer's transaction log and the Parquet files its commits add,
    without Spark: the buffer holds messages, whose row values (`row`, a map) have no statistics. A buffered
    row is visible to `current_rows` from the moment its commit exists, as a merged row is in the table."""

    def __init__(self, buffer: Path, table: str, column: str) -> None:
        self._root = buffer
        self._log = buffer / "_delta_log"
        self._table, self._column = table, column
        self._next = 0
        self.newest: int | None = None

    def poll(self) -> int | None:
        while (commit := self._log / f"{self._next:020d}.json").exists():
            for line in commit.read_text().splitlines():
                added = json.loads(line).get("add")
                if added is None:
                    continue
                data = pyarrow.parquet.read_table(self._root / urllib.parse.unquote(added["path"]),
                                                  columns=["table", "row"])
                for table, row in zip(data["table"].to_pylist(), data["row"].to_pylist(), strict=True):
                    value = dict(row or ()).get(self._column) if table == self._table else None
                    if value is not None and (self.newest is None or int(value) > self.newest):
                        self.newest = int(value)
            self._next += 1
        return self.newest


@dataclass(frozen=True)
class HeapSample:
    """The JVM's heap in use right after a full collection (its live set), seconds since the writer started."""

    at: float
    used_mib: float


def _live_heap_mib(spark: Any) -> float:
    """Heap in use after System.gc(), through java.lang.management (local mode: the driver's JVM runs the
    tasks too). A leak shows as a live set that keeps growing; garbage between collections does not."""
    memory = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
    memory.gc()
    return float(memory.getHeapMemoryUsage().getUsed()) / 2**20


def _freshness(spark: Any, mysql: MySQLServer, bootstrap: str, work: Path, seconds: float, rate: float,
               store: Path, poller: str, heap_every: float | None, merge_every: int, jfr: Path | None = None,
               optimize_every: int = 0
               ) -> tuple[list[float], list[LagSample], list[LagSample], float, list[HeapSample],
                          list[dict[str, Any]], list[tuple[float, float]]]:
    topic = f"live-{uuid.uuid4().hex[:6]}"
    uri = f"kafka://{bootstrap}/{topic}?partition-num=3&content-compatible=true&enable-tidb-extension=true" \
          f"&max-message-bytes={SINK_LIMIT}"
    mysql.execute("CREATE TABLE live (id INT PRIMARY KEY, v INT)", database=DATABASE)
    feed = _feed(mysql, uri, Checkpoint(start_position(_settings(mysql)), 0), store, blocking_target=False)
    config = PipelineConfig(SourceConfig(bootstrap, (topic,)), str(work / "live-delta"), str(work / "live-ckpt"),
                            available_now=False, processing_time="1 second", merge_every_seconds=merge_every,
                            maintenance=Maintenance(optimize_every_batches=optimize_every))
    committed: dict[int, float] = {}
    stop = threading.Event()
    per_commit = max(1, round(rate / 200))  # one INSERT round trip per row cannot reach thousands a second
    began = time.time()

    def write() -> None:
        with mysql.connect(DATABASE) as conn, conn.cursor() as cur:
            n = 0
            while not stop.is_set():
                rows = [(i, i) for i in range(n, n + per_commit)]
                cur.execute("BEGIN")
                cur.executemany("INSERT INTO live VALUES (%s, %s)", rows)
                cur.execute("COMMIT")
                done = time.time()
                for i, _ in rows:
                    committed[i] = done
                n += per_commit
                time.sleep(max(0.0, began + n / rate - time.time()))  # on schedule, not sleep-after-work

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    query = None
    batch = ApplyBatch(config)
    lags: list[float] = []
    curve: list[LagSample] = []
    merged: list[LagSample] = []  # merge-on-read: the lag of the table alone (what a plain Delta read sees)
    heap: list[HeapSample] = []
    batches: dict[int, dict[str, Any]] = {}  # batch id -> Spark's progress of that micro-batch
    merges = _time_merges(batch, began)
    try:
        time.sleep(2)  # the first rows create the topic and the table
        query = start_query(spark, read_stream(spark, config.source), config, batch=batch)
        recording = record_jfr(spark) if jfr is not None else None
        path = config.table_path(DATABASE, "live")
        tail = DeltaLogTail(Path(path), "id")
        buffered = BufferTail(Path(buffer_location(str(work / "live-delta"))), "live", "id") if merge_every else None
        seen = -1
        deadline = time.time() + seconds
        next_heap = time.time() + (heap_every or 0)
        next_progress = time.time()
        while time.time() < deadline:
            if heap_every is not None and time.time() >= next_heap:
                heap.append(HeapSample(time.time() - began, _live_heap_mib(spark)))
                next_heap += heap_every
            if time.time() >= next_progress:  # recentProgress keeps only the last 100 batches
                _keep_progress(query, batches)
                next_progress += 2.0
            if poller == "delta-log":
                time.sleep(0.05)
                top = merged_top = tail.poll()
                if buffered is not None and (waiting := buffered.poll()) is not None:
                    top = waiting if top is None else max(top, waiting)
                if buffered is not None and merged_top is not None and merged_top in committed:
                    now = time.time()
                    merged.append(LagSample(now - began, now - committed[merged_top], len(committed) - merged_top - 1))
            else:
                time.sleep(0.25)
                try:
                    top = spark.read.format("delta").load(path).agg({"id": "max"}).collect()[0][0]
                except Exception:
                    continue
            now = time.time()
            if top is not None and top > seen:
                lags += [now - committed[i] for i in range(seen + 1, top + 1) if i in committed]
                seen = top
            if seen >= 0 and seen in committed:
                curve.append(LagSample(now - began, now - committed[seen], len(committed) - seen - 1))
        if recording is not None and jfr is not None:
            recording.finish(jfr)
    finally:
        stop.set()
        writer.join()
        written_rate = len(committed) / (time.time() - began)
        if query is not None:
            _keep_progress(query, batches)
            query.stop()
            if batch.merger is not None:
                batch.merger.stop()
        feed.remove()
    return lags, curve, merged, written_rate, heap, [batches[b] for b in sorted(batches)], merges


def _time_merges(batch: ApplyBatch, began: float) -> list[tuple[float, float]]:
    """Merge-on-read: (seconds since `began`, seconds it took) of each merge of the change buffer the batch's
    merger thread makes, recorded by wrapping the batch's `merge_buffer`."""
    merges: list[tuple[float, float]] = []
    plain = batch.merge_buffer

    def timed(session: Any, *, force: bool = False) -> Any:
        started = time.perf_counter()
        report = plain(session, force=force)
        if report is not None:
            merges.append((time.time() - began, time.perf_counter() - started))
        return report

    batch.merge_buffer = timed  # type: ignore[method-assign]
    return merges


def _print_merges(merges: list[tuple[float, float]], seconds: float) -> None:
    """Merge-on-read: how many merges of the change buffer ended in each third of the `seconds` the run lasted
    and how long they took (thirds by time, not by count: slower merges are fewer)."""
    if not merges:
        return
    thirds = [[m for m in merges if i * seconds / 3 <= m[0] < (i + 1) * seconds / 3] for i in range(3)]
    click.echo(f"\n{len(merges)} merges of the change buffer; by third of the run, merges / median s / max s: "
               + ", ".join(f"{len(part)} / {statistics.median(m[1] for m in part):.2f} / "
                           f"{max(m[1] for m in part):.2f}" for part in thirds if part))


def _keep_progress(query: Any, batches: dict[int, dict[str, Any]]) -> None:
    """Record the rows and phase times of each micro-batch Spark still reports (its last 100)."""
    for progress in query.recentProgress:
        batches[progress.batchId] = {"rows": progress.numInputRows, **progress.durationMs}


def _print_batch_phases(progress: list[dict[str, Any]]) -> None:
    """Where the live run's micro-batches spent their time, by third of the run: the median of each phase
    Spark's stream progress reports (`durationMs`: addBatch is our batch function, triggerExecution the
    whole micro-batch), and rows per batch."""
    batches = [p for p in progress if p["rows"] > 0]
    phases = ("triggerExecution", "addBatch", "latestOffset", "walCommit", "commitOffsets")
    click.echo(f"\n{len(batches)} live micro-batches with rows; median ms per phase and the slowest, "
               "by third of the run:")
    for i in range(3):
        part = batches[i * len(batches) // 3:(i + 1) * len(batches) // 3]
        if part:
            click.echo(f"  {i + 1}: " + ", ".join(
                f"{name} {statistics.median(p.get(name, 0) for p in part):,.0f}" for name in phases)
                + f"; rows per batch {statistics.median(p['rows'] for p in part):,.0f}"
                + f"; slowest micro-batch {max(p.get('triggerExecution', 0) for p in part):,.0f}")


def _print_lag(what: str, curve: list[LagSample]) -> None:
    thirds = [curve[i * len(curve) // 3:(i + 1) * len(curve) // 3] for i in range(3)]
    click.echo(f"{what} by third of the run, mean / max s: " + ", ".join(
        f"{statistics.mean(s.lag for s in part):.1f} / {max(s.lag for s in part):.1f}"
        for part in thirds if part) + "; rows not yet visible, max: " + ", ".join(
        f"{max(s.behind for s in part):,}" for part in thirds if part))


def _print_heap(heap: list[HeapSample]) -> None:
    """The live set over the run: each sample, and the median by third of the run (a sample taken while a
    batch runs also counts that batch's data, so single samples jump; a leak moves the medians)."""
    if not heap:
        return
    thirds = [heap[i * len(heap) // 3:(i + 1) * len(heap) // 3] for i in range(3)]
    click.echo(f"\nJVM heap after a full GC, {len(heap)} samples, MiB: median by third of the run " + ", ".join(
        f"{statistics.median(h.used_mib for h in part):.0f}" for part in thirds if part)
        + f"; min {min(h.used_mib for h in heap):.0f}, max {max(h.used_mib for h in heap):.0f}")
    click.echo("  " + ", ".join(f"{h.at / 60:.0f}m {h.used_mib:.0f}" for h in heap))


def _plot(curve: list[LagSample], rate: float, path: Path, merged: list[LagSample] | None = None) -> None:
    """Delta's lag against time, one SVG (matplotlib, no display needed). The rows not yet visible are the
    lag times the rate, so they are printed, not drawn."""
    import matplotlib

    matplotlib.use("svg")
    from matplotlib import pyplot

    figure, axis = pyplot.subplots(figsize=(8, 3.2))
    axis.plot([s.at for s in curve], [s.lag for s in curve], color="tab:blue", linewidth=1,
              label="visible (change buffer or table)" if merged else None)
    if merged:
        axis.plot([s.at for s in merged], [s.lag for s in merged], color="tab:orange", linewidth=1,
                  label="merged into the table")
        axis.legend(fontsize=8, loc="upper left")
    axis.set_ylim(bottom=0)
    axis.set_xlabel("seconds since the writer started")
    axis.set_ylabel("Delta's lag, s")
    axis.set_title(f"Now minus the commit time of the newest row visible in Delta; writer at {rate:.0f} rows/s",
                   fontsize=10)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None})  # no timestamp: the file changes only with the data
    pyplot.close(figure)


@click.command()
@click.option("--rows", default=50_000, show_default=True)
@click.option("--live-seconds", default=30.0, show_default=True)
@click.option("--live-rate", default=200.0, show_default=True, help="Rows per second the live writer commits.")
@click.option("--lag-plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also draw Delta's lag over the live run into this SVG file.")
@click.option("--poller", type=click.Choice(["delta-log", "spark-query"]), default="delta-log", show_default=True,
              help="How the live run sees a row become visible: by reading Delta's transaction log, or by a "
                   "Spark query on the job's own session (which competes with the job for the cores).")
@click.option("--skip-materialise", is_flag=True, help="Only the live run (on a cold JVM).")
@click.option("--heap-every", type=float, default=None,
              help="Also sample the JVM's heap after a full GC every this many seconds of the live run.")
@click.option("--jfr", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also record the Spark JVM over the live run with Java Flight Recorder into this file, and "
                   "print where its CPU samples fall (bench/_jvm_profile.py).")
@click.option("--warm-runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Materialise this many times after the cold run (the JIT keeps warming up over the first few), "
                   "and print the median ratio of the warm runs.")
@click.option("--per-batch", type=click.IntRange(min=1), default=None,
              help="Materialise as a sustained catch-up: both jobs read the topic in micro-batches of at most "
                   "this many records (maxOffsetsPerTrigger) instead of one batch.")
@click.option("--optimize-every", type=click.IntRange(min=0), default=0, show_default=True,
              help="The live run's maintenance.optimize_every_batches (OPTIMIZE and deletion-vector purge of the "
                   "tables every N micro-batches); 0: none, the product's default.")
@click.option("--merge-every-seconds", "merge_every", type=int, default=0, show_default=True,
              help="Run the pipeline merge-on-read (target.merge_every_seconds); freshness then counts a row "
                   "visible once it is in the change buffer (read by current_rows) or merged.")
def main(rows: int, live_seconds: float, live_rate: float, lag_plot: Path | None, poller: str,
         skip_materialise: bool, heap_every: float | None, warm_runs: int, merge_every: int, jfr: Path | None,
         per_batch: int | None, optimize_every: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as scratch, mysql_server() as mysql:
        work = Path(scratch)
        broker = OwnBroker(work)
        broker.start()
        spark = build_spark_session("bench-pipeline")
        spark.sparkContext.setLogLevel("ERROR")
        try:
            start = Checkpoint(start_position(_settings(mysql)), 0)
            _load(mysql, 0 if skip_materialise else rows)
            if not skip_materialise:
                topic = f"bulk-{uuid.uuid4().hex[:6]}"
                uri = f"kafka://{broker.bootstrap}/{topic}?partition-num=3&content-compatible=true" \
                      f"&enable-tidb-extension=true&max-message-bytes={SINK_LIMIT}"
                feed = _feed(mysql, uri, start, work / "cf.db", blocking_target=True)
                assert feed.wait(900) and feed.state == "finished", feed.error
                records = feed.rows
                click.echo(f"\nmaterialise {records} change records ({rows} inserts + {rows // 10} updates), "
                           + ("in one micro-batch" if per_batch is None else
                              f"in micro-batches of at most {per_batch} records (about {-(-records // per_batch)})")
                           + ", each job into new tables; first in this JVM (cold), then again (warm)")
                click.echo(f"{'run':<7}{'job':<34}{'records/s':>12}{'ratio':>8}")
                ratios: dict[str, list[float]] = {}
                for run in ["cold", *(f"warm{n}" if warm_runs > 1 else "warm" for n in range(1, warm_runs + 1))]:
                    rates = _materialise(spark, broker.bootstrap, topic, work, records, run, merge_every, per_batch)
                    base = rates["plain Kafka -> Delta append"]
                    for name, rate in rates.items():
                        click.echo(f"{run:<7}{name:<34}{rate:>12,.0f}{rate / base:>8.2f}")
                        if run != "cold":
                            ratios.setdefault(name, []).append(rate / base)
                if warm_runs > 1:
                    for name, values in ratios.items():
                        click.echo(f"{'median':<7}{name:<34}{'':>12}{statistics.median(values):>8.2f}")
            found, curve, merged, written, heap, batches, merges = _freshness(
                spark, mysql, broker.bootstrap, work, live_seconds, live_rate, work / "cf2.db", poller, heap_every,
                merge_every, jfr, optimize_every)
            _print_batch_phases(batches)
            _print_merges(merges, live_seconds + 2)  # the writer starts 2 s before the query
            if jfr is not None:
                samples, shares = sample_shares(jfr)
                click.echo(f"\nJFR of the Spark JVM over the live run ({jfr}): {samples:,} execution samples")
                for group, share in shares.items():
                    click.echo(f"  {share:6.1%}  {group}")
            _print_heap(heap)
            lags = sorted(found)
            click.echo(f"\nlive writer: {written:,.0f} rows/s written ({live_rate:,.0f} asked)")
            if lags:
                p50, p99 = statistics.median(lags), lags[min(len(lags) - 1, int(len(lags) * 0.99))]
                click.echo(f"freshness at {live_rate:.0f} rows/s, trigger 1 s, {len(lags)} rows, seen by {poller}: "
                           f"p50 {p50:.2f} s, p99 {p99:.2f} s (MySQL commit -> visible in Delta)")
                _print_lag("Delta's lag", curve)
                if merged:
                    _print_lag("merged into the table (a plain Delta read, without the buffer)", merged)
                if lag_plot is not None:
                    _plot(curve, live_rate, lag_plot, merged)
                    click.echo(f"lag curve: {lag_plot}")
            else:
                click.echo("\nfreshness: no row became visible in the live window")
        finally:
            spark.stop()
            broker.stop()


if __name__ == "__main__":
    main()
