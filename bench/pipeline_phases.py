"""Where a micro-batch's fixed cost goes: the pipeline's batch function on a warm local session, timed
per phase (no Kafka, no changefeed: the records are built in memory, so only Spark and Delta are measured).

    .venv/bin/python bench/pipeline_phases.py [--batches 5] [--rows 200] [--tables 3 ...] [--table-rows 0]
        [--conf KEY=VALUE ...]

Batch 0 creates the tables (and warms the JVM); later batches update `--rows` keys spread over
`--tables` tables. `--table-rows N` first loads each table with N rows (one batch of inserts), so the
cost of a small batch into a large table shows. Prints, per batch, the
total and the time spent in the MERGE (`merge_latest`), in `ensure_table` and in table-floor lookups; the
rest is the driver-side scans (bad-message check, DDL scan, table layouts) and the parse.

`--tables` may be given several times (`--tables 1 --tables 100`): each count runs its own batches into
its own tables, one after the other in the same session, and the last lines compare the median warm
batch (batches 2 and later) of each count with the first count's.
"""

from __future__ import annotations

import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import spark_pipelines.jobs.apply as job  # after the sys.path line
from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import PipelineConfig, SourceConfig
from tests.spark_pipelines.canal import dml, records

ES = 1_700_000_000_000
PHASES = ("merge_latest", "append_latest", "ensure_table", "table_floor")


def _timed(spent: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.monotonic() - started
    return wrapper


def _fill(spark: Any, config: PipelineConfig, tables: int, first: int, table_rows: int) -> None:
    """Append rows `first`..`table_rows` to every table directly (older sequences than any batch), in
    the layout the pipeline gave it: a large table without pushing millions of messages through."""
    for n in range(tables):
        path = config.table_path("shop", f"acct{n}")
        schema = spark.read.format("delta").load(path).schema
        rows = spark.range(first, table_rows).selectExpr(
            "CAST(id AS INT) AS id", "concat('v', id) AS owner",
            "named_struct('ts', CAST(0 AS BIGINT), 'partition', 0, 'offset', id) AS _lakefeed_seq",
            "false AS _lakefeed_deleted", "CAST(NULL AS TIMESTAMP) AS _lakefeed_commit_ts")
        spark.createDataFrame(rows.rdd, schema).write.format("delta").mode("append").save(path)
    print(f"filled {tables} table(s) to {table_rows} rows each", flush=True)


@click.command()
@click.option("--batches", default=5, show_default=True)
@click.option("--rows", default=200, show_default=True, help="Changes per batch (one per key), over all tables.")
@click.option("--tables", "table_counts", multiple=True, type=int, default=(3,), show_default=True,
              help="Tables the changes are spread over (repeatable: each count is run in turn and compared).")
@click.option("--table-rows", default=0, show_default=True, help="Rows loaded into each table before batch 1.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="A Spark SQL setting for the session (repeatable), to measure a setting's effect.")
def main(batches: int, rows: int, table_counts: tuple[int, ...], table_rows: int, confs: tuple[str, ...]) -> None:
    spent: dict[str, float] = {}
    for name in PHASES:  # the job module's own references, so the job calls the timed versions
        setattr(job, name, _timed(spent, name, getattr(job, name)))
    spark = build_spark_session("lakefeed-bench-phases")
    spark.sparkContext.setLogLevel("ERROR")
    for setting in confs:
        key, sep, value = setting.partition("=")
        if not sep:
            raise click.BadParameter(f"{setting!r} is not KEY=VALUE", param_hint="--conf")
        spark.conf.set(key, value)
    warm: dict[int, list[float]] = {}
    try:
        for tables in table_counts:
            print(f"{tables} table(s), {rows} changes per batch", flush=True)
            warm[tables] = _run(spark, spent, batches, rows, tables, table_rows)[2:]
    finally:
        spark.stop()
    if len(table_counts) > 1 and all(warm.values()):
        base = statistics.median(warm[table_counts[0]])
        for tables in table_counts:
            median = statistics.median(warm[tables])
            print(f"{tables} table(s): median warm batch {median:.2f}s = {median / base:.2f}x "
                  f"{table_counts[0]} table(s)")


def _run(spark: Any, spent: dict[str, float], batches: int, rows: int, tables: int, table_rows: int
         ) -> list[float]:
    """Run `batches` batches into new tables; returns each batch's total seconds."""
    work = tempfile.mkdtemp(prefix="lakefeed-phases-")
    apply = job.ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), f"{work}/delta", f"{work}/ckpt"))
    totals = []
    for batch in range(batches):
        kind = "INSERT" if batch == 0 else "UPDATE"
        # Updates touch keys spread over the whole table (a stride), as a live source does.
        stride = max(1, table_rows // -(-rows // tables)) if batch else 1
        changes = [dml(f"acct{n % tables}", kind, {"id": str((n // tables) * stride), "owner": f"v{batch}"},
                       es=ES + batch * 10_000_000 + n) for n in range(rows * (tables if batch == 0 else 1))]
        frame = records(spark, changes)
        spent.clear()
        started = time.monotonic()
        apply(frame, batch)
        total = time.monotonic() - started
        totals.append(total)
        phases = "  ".join(f"{name} {spent.get(name, 0.0):.2f}s" for name in PHASES)
        print(f"batch {batch}: {total:.2f}s  {phases}  rest {total - sum(spent.values()):.2f}s", flush=True)
        if batch == 0 and table_rows > rows:
            _fill(spark, apply.config, tables, rows, table_rows)
    return totals


if __name__ == "__main__":
    main()
