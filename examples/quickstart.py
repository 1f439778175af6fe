"""The main job on embedded defaults: MySQL -> changefeed server -> bundled broker -> Spark -> Delta.

A private MariaDB with row-based binlog runs a sysbench-like workload (examples/workload.py); a
`changefeed server` process runs one changefeed, created with the `changefeed` CLI from
examples/changefeeds/quickstart.yaml, into the bundled broker (a 3-node `broker dev-cluster`: replication
factor 3, min.insync.replicas 2); the Spark Structured Streaming job applies the topic to Delta; the Delta
tables are shown and compared with MySQL.

Bounded (the default, what CI runs): a fixed workload, then the changefeed catches up, the job runs
with availableNow, every table is compared, everything stops. `--follow SECONDS` keeps the workload
and a streaming query running (progress on screen) for that long, or until Ctrl-C with `--follow 0`,
then winds down the same way.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click
import yaml
from progress import Console, caught_up_view, final_report, follow_view
from rich.live import Live
from rich.markup import escape
from services import Brokers, ChangefeedServer, CliError, binlog_end, reached, start_brokers
from workload import Workload

from lakefeed_testing import MySQLServer, mysql_server
from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import PipelineConfig, load_config
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import start_query

TABLES = ("sbtest1", "sbtest2")
CHANGEFEED_ID = "shop"
TOPIC = "shop"
CHANGEFEED_CONFIG = Path(__file__).parent / "changefeeds" / "quickstart.yaml"
CATCH_UP_TIMEOUT_S = 600
STATS_SETTLE_S = 10.0  # how long the final table may wait for the statistics to count every change


def sink_uri(bootstrap: str, replication_factor: int = 3) -> str:
    return (f"kafka://{bootstrap}/{TOPIC}?partition-num=3&replication-factor={replication_factor}"
            "&content-compatible=true&enable-tidb-extension=true")


def write_pipeline_config(bootstrap: str, workdir: Path, streaming: bool) -> PipelineConfig:
    """The pipeline's YAML as a user writes it (examples/pipelines/), loaded by the real loader."""
    trigger = {"processing_time": "5 seconds"} if streaming else {"available_now": True}
    document = {
        "source": {"bootstrap_servers": bootstrap, "topics": [TOPIC], "starting_offsets": "earliest"},
        "target": {"path": str(workdir / "delta"), "scd_type": 1},
        "tables": {"include": ["shop.*"]},
        "checkpoint": str(workdir / "pipeline-checkpoint"),
        "trigger": trigger,
    }
    path = workdir / "pipeline.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return load_config(path)


def create_changefeed(console: Console, cdc: ChangefeedServer, server: MySQLServer, brokers: Brokers) -> None:
    source = f"mysql://{server.user}:{server.password}@{server.host}:{server.port}?tls=false"
    uri = sink_uri(brokers.bootstrap, brokers.replication_factor)
    args = ["--changefeed-id", CHANGEFEED_ID, "--source", source, "--sink-uri", uri,
            "--config", str(CHANGEFEED_CONFIG), "--start", "now"]
    shown = " ".join(a if a != source else "'mysql://USER:PASSWORD@...'" for a in args)
    console.step(f"changefeed create {shown} --server {cdc.url}")
    detail, warnings = cdc.create(*args)
    for line in warnings.splitlines():
        console.step(f"[yellow]{escape(line)}[/]")  # text from the server, not markup
    console.step(f"changefeed [bold]{detail['id']}[/] is {detail['state']}, checkpoint {detail['checkpoint']}")
    # Its snapshot first (snapshot-mode initial; a position once it is acknowledged), so the workload's every
    # change goes through the binlog and the final table's delivered rows are the workload's changes. Without
    # this wait a late snapshot could copy the finished tables instead (fewer rows delivered, Delta as equal).
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while not (cdc.cli("query", "-c", CHANGEFEED_ID, "--simple")[0].get("checkpoint") or {}).get("file"):
        if time.monotonic() > deadline:
            raise click.ClickException(f"the changefeed's snapshot did not finish in {CATCH_UP_TIMEOUT_S} s")
        time.sleep(0.5)
    console.step("changefeed snapshot done: the workload's changes follow through the binlog")


def wait_caught_up(console: Console, cdc: ChangefeedServer, end: tuple[str, int], changes: int) -> dict[str, Any]:
    """Poll `changefeed query`/`statistics` until the checkpoint reaches the binlog end and the per-table
    statistics count the workload's `changes`; show progress.

    `query` comes first: the server stores a changefeed's statistics with its checkpoint, so statistics
    read after a checkpoint at the end count every row up to it; the final table still waits a few seconds
    at most for the count, so the first screen a user reads is right."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    settle_until: float | None = None
    with Live(console=console.rich, refresh_per_second=2, transient=False) as live:
        while True:
            detail, _ = cdc.cli("query", "-c", CHANGEFEED_ID, "--simple")
            stats, _ = cdc.cli("statistics", "-c", CHANGEFEED_ID)
            live.update(caught_up_view(stats, detail, end))
            if detail["state"] in ("failed", "finished"):
                raise click.ClickException(f"the changefeed is {detail['state']}: {detail['error']}")
            if reached(detail, end):
                counted = sum(int(t.get("rows", 0)) for t in stats.get("tables", {}).values())
                settle_until = settle_until or time.monotonic() + STATS_SETTLE_S
                if counted >= changes or time.monotonic() > settle_until:
                    break
            if time.monotonic() > deadline:
                raise click.ClickException(f"the changefeed did not reach {end} in {CATCH_UP_TIMEOUT_S} s")
            time.sleep(1)
    console.rich.line()
    return dict(stats)


def run_pipeline_once(console: Console, spark: Any, config: PipelineConfig) -> None:
    query = start_query(spark, read_stream(spark, config.source), config, once=True)
    seen = -1
    while query.isActive:
        progress = query.lastProgress
        if progress and progress["batchId"] != seen:
            seen = progress["batchId"]
            console.step(f"pipeline: micro-batch {seen} applied {progress['numInputRows']} records")
        query.awaitTermination(timeout=2)
    if query.exception() is not None:
        raise click.ClickException(f"the pipeline failed: {query.exception()}")


def follow(console: Console, spark: Any, cdc: ChangefeedServer, workload: Workload, config: PipelineConfig,
           seconds: float) -> Any:
    """Keep changes coming and a streaming query applying them until `seconds` pass (0: Ctrl-C); then stop
    the workload and return the query, still running, to finish what is left."""
    query = start_query(spark, read_stream(spark, config.source), config)
    stop = threading.Event()
    churn = threading.Thread(target=workload.churn, args=(stop, 100.0), name="workload", daemon=True)
    churn.start()
    until = "Ctrl-C stops it" if seconds <= 0 else f"for {seconds:.0f} s (Ctrl-C stops it earlier)"
    console.step(f"following: the workload keeps changing rows, the pipeline runs every 5 s; {until}")
    deadline = time.monotonic() + seconds if seconds > 0 else None
    try:
        with Live(console=console.rich, refresh_per_second=1) as live:
            while deadline is None or time.monotonic() < deadline:
                stats, _ = cdc.cli("statistics", "-c", CHANGEFEED_ID)
                live.update(follow_view(stats, query.lastProgress, workload.changes))
                if not query.isActive:
                    raise click.ClickException(f"the pipeline stopped: {query.exception()}")
                time.sleep(1)
        console.rich.line()
    except KeyboardInterrupt:
        console.step("Ctrl-C: stopping the workload, then letting the changefeed and the pipeline catch up")
    except BaseException:
        query.stop()
        raise
    finally:
        stop.set()
        churn.join(timeout=30)
    return query


def finish_streaming(console: Console, query: Any) -> None:
    """Let the query apply everything the topic holds, then stop it between micro-batches (stopping it in
    the middle of one is safe, the batch is re-run, but Spark prints the interruption at length)."""
    console.step("pipeline: applying what is left, then stopping the streaming query")
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def run_main_job(server: MySQLServer, spark: Any, rows: int, workdir: Path, follow_seconds: float | None = None,
                 console: Console | None = None) -> bool:
    """Workload -> changefeed server -> broker -> Spark -> Delta; True when every table equals MySQL."""
    console = console or Console()
    workdir.mkdir(parents=True, exist_ok=True)
    server.execute("CREATE DATABASE IF NOT EXISTS shop")
    workload = Workload(lambda: server.connect("shop", autocommit=False), TABLES)
    brokers = start_brokers(workdir / "broker", nodes=3)
    cdc = ChangefeedServer(workdir / "changefeed")
    try:
        console.step(f"bundled broker, {len(brokers.ports)} nodes, on {brokers.bootstrap} "
                     f"(data and logs in {workdir / 'broker'})")
        cdc.start()
        console.step(f"changefeed server on {cdc.url} (metadata and log in {workdir / 'changefeed'})")
        create_changefeed(console, cdc, server, brokers)
        console.step(f"workload: {rows} rows into each of {', '.join(TABLES)}, then updates, deletes, key changes")
        workload.load(rows)
        config = write_pipeline_config(brokers.bootstrap, workdir, streaming=follow_seconds is not None)
        query = None if follow_seconds is None else follow(console, spark, cdc, workload, config, follow_seconds)
        end = binlog_end(server)
        console.step(f"workload done: {workload.changes} row changes; binlog ends at {end[0]}:{end[1]}")
        try:
            stats = wait_caught_up(console, cdc, end, workload.changes)
        except BaseException:
            if query is not None:
                query.stop()
            raise
        if query is not None:
            finish_streaming(console, query)
        else:
            console.step(f"pipeline: applying topic {TOPIC} to Delta under {config.target_path}")
            run_pipeline_once(console, spark, config)
        equal = final_report(console, spark, server, config, TABLES, stats)
        cdc.cli("remove", "-c", CHANGEFEED_ID)
        return equal
    except CliError as exc:
        raise click.ClickException(f"{exc} (server log: {cdc.service.log_path})") from exc
    finally:
        cdc.stop()
        brokers.stop()


@click.command()
@click.option("--rows", default=5000, show_default=True, help="Rows the sample workload inserts per table.")
@click.option("--follow", "follow_seconds", type=float, default=None,
              help="After the load, keep the workload and a streaming pipeline running this many seconds "
                   "(0: until Ctrl-C), then check.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the broker data, changefeed metadata, checkpoints and Delta tables go "
                   "(default: a temporary directory, removed at the end).")
def main(rows: int, follow_seconds: float | None, workdir: Path | None) -> None:
    """Run MySQL -> changefeed server -> bundled broker -> Spark -> Delta, then check Delta equals MySQL."""
    console = Console()
    started = time.monotonic()
    console.step("starting MariaDB with row-based binlog, and Spark with Delta")
    with tempfile.TemporaryDirectory(prefix="lakefeed-demo-") as scratch, mysql_server() as server:
        base = workdir or Path(scratch)
        spark = build_spark_session("lakefeed-quickstart")
        spark.sparkContext.setLogLevel("ERROR")
        try:
            console.step(f"MariaDB ({server.flavor}) on {server.host}:{server.port}")
            equal = run_main_job(server, spark, rows, base, follow_seconds, console)
        finally:
            spark.stop()
    console.step(f"done in {time.monotonic() - started:.0f} s; every Delta table equals MySQL: {equal}")
    console.step("everything this run started is stopped. To keep it running: bash scripts/demo.sh --follow 0 "
                 "(Ctrl-C stops it cleanly);" + (" to keep the Delta tables: --workdir DIR" if workdir is None
                                                  else f" the Delta tables stay in {base / 'delta'}"))
    sys.exit(0 if equal else 1)


if __name__ == "__main__":
    main()
