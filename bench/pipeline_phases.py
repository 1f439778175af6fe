"""Where a micro-batch's fixed cost goes: the pipeline's batch function on a warm local session, timed
per phase (no Kafka, no changefeed: the records are built in memory, so only Spark and Delta are measured).

    .venv/bin/python bench/pipeline_phases.py [--batches 5] [--rows 200]

Batch 0 creates the table (and warms the JVM); later batches update every key. Prints, per batch, the
total and the time spent in the MERGE (`merge_latest`), in `ensure_table` and in table-floor lookups; the
rest is the driver-side scans (bad-message check, DDL scan, table layouts) and the parse.
"""

from __future__ import annotations

import functools
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
PHASES = ("merge_latest", "ensure_table", "table_floor")


def _timed(spent: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.monotonic() - started
    return wrapper


@click.command()
@click.option("--batches", default=5, show_default=True)
@click.option("--rows", default=200, show_default=True, help="Changes per batch (one per key).")
def main(batches: int, rows: int) -> None:
    spent: dict[str, float] = {}
    for name in PHASES:  # the job module's own references, so the job calls the timed versions
        setattr(job, name, _timed(spent, name, getattr(job, name)))
    spark = build_spark_session("lakefeed-bench-phases")
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="lakefeed-phases-")
    apply = job.ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), f"{work}/delta", f"{work}/ckpt"))
    try:
        for batch in range(batches):
            kind = "INSERT" if batch == 0 else "UPDATE"
            changes = [dml("acct", kind, {"id": str(key), "owner": f"v{batch}"}, es=ES + batch * rows + key)
                       for key in range(rows)]
            frame = records(spark, changes)
            spent.clear()
            started = time.monotonic()
            apply(frame, batch)
            total = time.monotonic() - started
            phases = "  ".join(f"{name} {spent.get(name, 0.0):.2f}s" for name in PHASES)
            print(f"batch {batch}: {total:.2f}s  {phases}  rest {total - sum(spent.values()):.2f}s", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
