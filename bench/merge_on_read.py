"""Merge-on-read measured against issue 22's goals, next to the pipeline's MERGE per batch (a prototype of
the write and read paths in this file only; the pipeline does not use it).

    .venv/bin/python bench/merge_on_read.py [--batches 6] [--rows 200] [--tables 1 --tables 3 --tables 100]

For each table count, in one warm local session: batch 0 creates the tables through the pipeline's batch
function (jobs/apply.ApplyBatch); then each warm batch of `--rows` updates spread over the tables is timed
two ways, on the same records:
- merge: the pipeline's batch function (one sequence-guarded Delta MERGE per table);
- append: merge-on-read's write, the batch summary (the one Spark action that finds bad messages and DDL)
  and one Delta append of the batch's row changes, untyped, into one change log for every table;
- read: merge-on-read's cost moved to the reader, the current state of one table (its Delta table, less
  the keys the change log holds, plus the newest pending change per key, without tombstones), counted;
- compact: the MERGE of one table's pending changes into its Delta table, which merge-on-read must still
  run on a cadence (per table, as today's batch does).
The same updates go both ways, so after the run each table's `read` must equal its Delta table written by
`merge`: the script checks that for the first table and fails otherwise.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows, merge_latest
from spark_pipelines.jobs.apply import TABLE_DDL, ApplyBatch
from spark_pipelines.transforms.latest import latest_per_key
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ, parse_messages
from spark_pipelines.transforms.rows import DELETE, OP, TableShape, changes_of
from spark_pipelines.transforms.summary import BatchSummary, summary_rows
from tests.spark_pipelines.canal import dml, records

ES = 1_700_000_000_000
CHANGE_LOG_COLUMNS = ("database", "table", "type", "row", "old", "valid", "is_ddl", SEQ, COMMIT_TS)


def _timed(action: Any, *args: Any) -> float:
    started = time.monotonic()
    action(*args)
    return time.monotonic() - started


def _append(messages: DataFrame, change_log: str) -> None:
    """Merge-on-read's batch: what the driver must know (one action), then one append for all tables."""
    summary = BatchSummary.of(summary_rows(messages).collect(), TABLE_DDL)
    assert summary.bad is None and not summary.ddl  # DDL would compact the tables it names first
    (messages.where(F.col("valid") & ~F.col("is_ddl")).select(*CHANGE_LOG_COLUMNS)
     .write.format("delta").mode("append").partitionBy("database", "table").save(change_log))


def _pending(spark: Any, change_log: str, shape: TableShape) -> DataFrame:
    """The newest pending change per key of one table, typed as the pipeline types it."""
    log = spark.read.format("delta").load(change_log).where(
        (F.col("database") == shape.database) & (F.col("table") == shape.table))
    return latest_per_key(changes_of(log, shape), shape.primary_key)


def _current(spark: Any, path: str, change_log: str, shape: TableShape) -> DataFrame:
    """The table as MySQL has it, read through merge-on-read: its Delta table's live rows whose key has no
    pending change, plus the pending upserts. (The Delta table was compacted up to before the change log;
    a real design would also keep each table's compacted sequence to skip replayed changes.)"""
    pending = _pending(spark, change_log, shape)
    keys = list(shape.primary_key)
    kept = live_rows(spark, path).join(pending.select(*keys), keys, "left_anti")
    upserts = pending.where(F.col(OP) != DELETE).select(*shape.names)
    return kept.unionByName(upserts)


@click.command()
@click.option("--batches", default=6, show_default=True)
@click.option("--rows", default=200, show_default=True, help="Updates per warm batch, over all tables.")
@click.option("--tables", "table_counts", multiple=True, type=int, default=(1, 3, 100), show_default=True)
def main(batches: int, rows: int, table_counts: tuple[int, ...]) -> None:
    spark = build_spark_session("lakefeed-bench-merge-on-read")
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[int, dict[str, list[float]]] = {}
    try:
        for tables in table_counts:
            work = tempfile.mkdtemp(prefix="lakefeed-mor-")
            merged = ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), f"{work}/m", f"{work}/mc"))
            based = ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), f"{work}/r", f"{work}/rc"))
            change_log = f"{work}/change-log"
            inserts = [dml(f"acct{n % tables}", "INSERT", {"id": str(n // tables), "owner": "v0"}, es=ES + n)
                       for n in range(rows * tables)]
            for apply in (merged, based):  # both sides start from the same tables, created by the pipeline
                apply(records(spark, inserts), 0)
            shape = based.layouts[based.config.table_path("shop", "acct0")]
            times: dict[str, list[float]] = {"merge": [], "append": [], "read": []}
            for batch in range(1, batches):
                changes = [dml(f"acct{n % tables}", "UPDATE", {"id": str(n // tables), "owner": f"v{batch}"},
                               es=ES + batch * 10_000_000 + n) for n in range(rows)]
                frame = records(spark, changes).persist()
                times["merge"].append(_timed(merged, frame, batch))
                messages = parse_messages(frame).persist()
                times["append"].append(_timed(_append, messages, change_log))
                messages.unpersist()
                frame.unpersist()
                current = _current(spark, based.config.table_path("shop", "acct0"), change_log, shape)
                times["read"].append(_timed(current.count))
                print(f"{tables} table(s) batch {batch}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()),
                      flush=True)
            base_path, merge_path = based.config.table_path("shop", "acct0"), merged.config.table_path("shop", "acct0")
            current = _current(spark, base_path, change_log, shape)
            expected = live_rows(spark, merge_path)
            if current.exceptAll(expected).count() or expected.exceptAll(current).count():
                raise SystemExit(f"merge-on-read's acct0 differs from the MERGEd one ({tables} tables)")
            pending = _pending(spark, change_log, shape)
            times["compact one table"] = [_timed(merge_latest, spark, base_path, pending, shape)]
            compacted = live_rows(spark, base_path)
            if compacted.exceptAll(expected).count() or expected.exceptAll(compacted).count():
                raise SystemExit(f"acct0 compacted differs from the MERGEd one ({tables} tables)")
            results[tables] = times
    finally:
        spark.stop()
    print(f"\nwarm batches of {rows} updates (median of batches 2-{batches - 1}; batch 1 warms each path)")
    print(f"{'tables':>7}{'merge (today)':>15}{'append (MoR)':>14}{'read 1 table':>14}{'compact 1 table':>17}")
    for tables, times in results.items():
        warm = {k: statistics.median(v[1:] or v) for k, v in times.items()}
        print(f"{tables:>7}{warm['merge']:>14.2f}s{warm['append']:>13.2f}s{warm['read']:>13.2f}s"
              f"{warm['compact one table']:>16.2f}s")


if __name__ == "__main__":
    main()
