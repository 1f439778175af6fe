"""The main job on embedded defaults: MySQL -> changefeed -> bundled broker -> Spark -> Delta.

A private MariaDB with row-based binlog runs a sysbench-like workload; a changefeed captures it and
sends canal-JSON to our own broker (a real `broker start` process); the Spark Structured Streaming job
applies the topic to Delta; the Delta table is compared with MySQL. Bounded: the workload is fixed,
the changefeed stops at the binlog position the workload ended at, the job runs with availableNow.

What is not in it yet (README status table): a 3-node broker cluster, the changefeed server process
(the changefeed runs in this process), and a workload that keeps running.
"""

import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import click

from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import CaptureOptions, start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer, mysql_server
from lakefeed_testing.own_broker import SINK_LIMIT, OwnBroker
from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import start_query

TABLES = ("sbtest1", "sbtest2")


def step(message: str) -> None:
    click.echo(click.style("==> ", fg="cyan", bold=True) + message)


def run_workload(server: MySQLServer, rows: int) -> None:
    server.execute("CREATE DATABASE IF NOT EXISTS shop")
    for table in TABLES:
        server.execute(
            f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120), pad CHAR(60), "
            "price DECIMAL(10,2))",
            database="shop",
        )
    with server.connect("shop", autocommit=False) as conn, conn.cursor() as cur:
        for table in TABLES:
            for start in range(0, rows, 500):
                batch = [(i, i * 7 % 1000, f"c-{i}", f"pad-{i}", f"{i % 997}.{i % 100:02d}")
                         for i in range(start, min(rows, start + 500))]
                cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s)", batch)
                conn.commit()
            cur.execute(f"UPDATE {table} SET k = k + 1 WHERE id % 10 = 0")
            cur.execute(f"DELETE FROM {table} WHERE id % 25 = 0")
            cur.execute(f"UPDATE {table} SET id = id + {rows} WHERE id % 50 = 1")  # key-changing updates
            conn.commit()


def run_changefeed(server: MySQLServer, bootstrap: str, topic: str, start: Checkpoint, store: Path) -> int:
    settings = ConnectionSettings(server.host, server.port, server.user, server.password, tls=False)
    target = start_position(settings)
    uri = (f"kafka://{bootstrap}/{topic}?partition-num=3&content-compatible=true&enable-tidb-extension=true"
           f"&max-message-bytes={SINK_LIMIT}")
    feed = Changefeed(ChangefeedSpec(
        "quickstart", settings, uri,
        capture=CaptureOptions(snapshot_mode="never", change_filter=ChangeFilter(TableFilter(["shop.*"]))),
        start=start, target=target, checkpoint_store_url=f"sqlite:///{store}",
    ))
    feed.create()
    feed.start()
    started = time.monotonic()
    while not feed.wait(2):
        step(f"changefeed: {feed.rows} rows delivered, checkpoint {feed.checkpoint}")
        if time.monotonic() - started > 600:
            feed.remove()
            raise click.ClickException("the changefeed did not reach the end of the workload in 10 minutes")
    if feed.state != "finished":
        raise click.ClickException(f"the changefeed ended {feed.state}: {feed.error}")
    return feed.rows


def run_pipeline(spark: Any, config: PipelineConfig) -> None:
    query = start_query(spark, read_stream(spark, config.source), config)
    while query.isActive:
        progress = query.lastProgress
        if progress:
            step(f"pipeline: batch {progress['batchId']}, {progress['numInputRows']} records")
        query.awaitTermination(timeout=5)
    if query.exception() is not None:
        raise click.ClickException(f"the pipeline failed: {query.exception()}")


def compare(spark: Any, server: MySQLServer, config: PipelineConfig) -> bool:
    equal = True
    for table in TABLES:
        with server.connect("shop") as conn, conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            expected = {tuple(row) for row in cur.fetchall()}
        delta = live_rows(spark, config.table_path("shop", table))
        got = {tuple(row) for row in delta.collect()}
        same = got == expected
        equal &= same
        step(f"Delta table {config.table_path('shop', table)}: {len(got)} rows; MySQL has {len(expected)}; "
             f"equal: {same}")
        delta.orderBy("id").show(3, truncate=False)
    return equal


def run_main_job(server: MySQLServer, spark: Any, rows: int, workdir: Path) -> bool:
    """Workload -> changefeed -> bundled broker -> Spark -> Delta; True when every table equals MySQL."""
    settings = ConnectionSettings(server.host, server.port, server.user, server.password, tls=False)
    start = Checkpoint(start_position(settings), 0)
    step(f"MariaDB ({server.flavor}) on {server.host}:{server.port}; running a workload of {rows} rows per table")
    run_workload(server, rows)
    (workdir / "broker").mkdir(parents=True, exist_ok=True)
    broker = OwnBroker(workdir / "broker")
    broker.start()
    try:
        step(f"bundled broker on {broker.bootstrap}")
        topic = f"shop-{uuid.uuid4().hex[:6]}"
        delivered = run_changefeed(server, broker.bootstrap, topic, start, workdir / "changefeed.db")
        step(f"changefeed delivered {delivered} row changes to topic {topic}")
        config = PipelineConfig(SourceConfig(broker.bootstrap, (topic,)), str(workdir / "delta"),
                                str(workdir / "checkpoints" / topic))
        run_pipeline(spark, config)
        return compare(spark, server, config)
    finally:
        broker.stop()


@click.command()
@click.option("--rows", default=5000, show_default=True, help="Rows the sample workload inserts per table.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the broker data, checkpoints and Delta tables go (default: a temporary directory).")
def main(rows: int, workdir: Path | None) -> None:
    """Run MySQL -> changefeed -> bundled broker -> Spark -> Delta once, then check Delta equals MySQL."""
    started = time.monotonic()
    step("starting MariaDB with row-based binlog and Spark with Delta")
    with tempfile.TemporaryDirectory(prefix="lakefeed-demo-") as scratch, mysql_server() as server:
        base = workdir or Path(scratch)
        spark = build_spark_session("lakefeed-quickstart")
        spark.sparkContext.setLogLevel("ERROR")
        try:
            equal = run_main_job(server, spark, rows, base)
        finally:
            spark.stop()
    step(f"done in {time.monotonic() - started:.0f} s; every Delta table equals MySQL: {equal}")
    if workdir is None:
        step("the demo ran in a temporary directory, now removed; pass --workdir DIR to keep the Delta tables")
    sys.exit(0 if equal else 1)


if __name__ == "__main__":
    main()
