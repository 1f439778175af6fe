"""Merge-on-read (`target.merge_every_seconds`) measured against issue 22's goals, next to the pipeline's
MERGE per micro-batch, on the same records, in one warm local session.

    .venv/bin/python bench/merge_on_read.py [--batches 6] [--rows 200] [--tables 1 --tables 3 --tables 100]

For each table count: batch 0 creates the tables through each job's batch function (jobs/apply.ApplyBatch);
then each warm batch of `--rows` updates spread over the tables is timed three ways:
- merge: the default job's batch function (one sequence-guarded Delta MERGE per table);
- buffered: the merge-on-read job's batch function, as it runs between two merges of its change buffer (the
  batch summary, the one Spark action that finds bad messages and DDL, and one Delta append for all tables);
- read 1 table: what merge-on-read moves to its readers, `io/current.current_rows` of the first table
  (its Delta table with the buffered changes laid over it), counted.
After the batches: the merge-on-read job's merge of its whole buffer (what it runs every
`merge_every_seconds`, here all the warm batches at once), timed. The script checks that the first table
read through `current_rows` before that merge, and as a plain Delta table after it, equals the MERGEd one,
and exits non-zero otherwise.
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

from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.current import current_rows
from spark_pipelines.io.delta import live_rows
from spark_pipelines.jobs.apply import ApplyBatch
from tests.spark_pipelines.canal import dml, records

ES = 1_700_000_000_000
NEVER = 10**9  # the buffer is merged when the script says


def _timed(action: Any, *args: Any, **kwargs: Any) -> float:
    started = time.monotonic()
    action(*args, **kwargs)
    return time.monotonic() - started


def _same(current: Any, expected: Any, what: str) -> None:
    if current.exceptAll(expected).count() or expected.exceptAll(current).count():
        raise SystemExit(f"merge-on-read differs from the MERGEd table: {what}")


def _run(spark: Any, batches: int, rows: int, tables: int) -> dict[str, list[float]]:
    work = tempfile.mkdtemp(prefix="lakefeed-mor-")
    source = SourceConfig("unused:9092", ("cdc",))
    merged = ApplyBatch(PipelineConfig(source, f"{work}/m", f"{work}/mc"))
    buffered = ApplyBatch(PipelineConfig(source, f"{work}/b", f"{work}/bc", merge_every_seconds=NEVER))
    inserts = [dml(f"acct{n % tables}", "INSERT", {"id": str(n // tables), "owner": "v0"}, es=ES + n)
               for n in range(rows * tables)]
    for job in (merged, buffered):  # both start from the same tables, created (and written) by batch 0
        job(records(spark, inserts), 0)
    times: dict[str, list[float]] = {"merge": [], "buffered": [], "read": []}
    for batch in range(1, batches):
        changes = [dml(f"acct{n % tables}", "UPDATE", {"id": str(n // tables), "owner": f"v{batch}"},
                       es=ES + batch * 10_000_000 + n) for n in range(rows)]
        frame = records(spark, changes).selectExpr("topic", "partition", f"offset + {batch * rows} AS offset",
                                                   "key", "value").persist()
        times["merge"].append(_timed(merged, frame, batch))
        times["buffered"].append(_timed(buffered, frame, batch))
        frame.unpersist()
        times["read"].append(_timed(current_rows(spark, buffered.config, "shop", "acct0").count))
        print(f"{tables} table(s) batch {batch}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()),
              flush=True)
    expected = live_rows(spark, merged.config.table_path("shop", "acct0"))
    _same(current_rows(spark, buffered.config, "shop", "acct0"), expected, f"acct0 read ({tables} tables)")
    times["merge of the buffer"] = [_timed(buffered.merge_buffer, spark, force=True)]
    _same(live_rows(spark, buffered.config.table_path("shop", "acct0")), expected, f"acct0 merged ({tables} tables)")
    return times


@click.command()
@click.option("--batches", default=6, show_default=True)
@click.option("--rows", default=200, show_default=True, help="Updates per warm batch, over all tables.")
@click.option("--tables", "table_counts", multiple=True, type=int, default=(1, 3, 100), show_default=True)
def main(batches: int, rows: int, table_counts: tuple[int, ...]) -> None:
    spark = build_spark_session("lakefeed-bench-merge-on-read")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        results = {tables: _run(spark, batches, rows, tables) for tables in table_counts}
    finally:
        spark.stop()
    print(f"\nwarm batches of {rows} updates (median of batches 2-{batches - 1}; batch 1 warms each path); the "
          f"merge of the buffer applies batches 1-{batches - 1} at once")
    print(f"{'tables':>7}{'merge (default)':>17}{'buffered (MoR)':>16}{'MoR / merge':>13}{'read 1 table':>14}"
          f"{'merge of the buffer':>21}")
    first = None
    for tables, times in results.items():
        warm = {k: statistics.median(v[1:] or v) for k, v in times.items()}
        first = first or warm
        print(f"{tables:>7}{warm['merge']:>16.2f}s{warm['buffered']:>15.2f}s{warm['buffered'] / warm['merge']:>12.2f}x"
              f"{warm['read']:>13.2f}s{warm['merge of the buffer']:>20.2f}s")
    if first is not None and len(results) > 1:
        print("each count against the first count's warm batch: " + ", ".join(
            f"{tables} tables merge {statistics.median(t['merge'][1:] or t['merge']) / first['merge']:.1f}x, "
            f"buffered {statistics.median(t['buffered'][1:] or t['buffered']) / first['buffered']:.1f}x"
            for tables, t in results.items()))


if __name__ == "__main__":
    main()
