"""What the demo shows on screen (rich): steps, live progress of the changefeed and the pipeline, and
the final view of the Delta tables (row counts, a few rows, the lag) compared with MySQL."""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import functions as F
from rich.console import Console as RichConsole
from rich.console import Group
from rich.table import Table

from lakefeed_testing import MySQLServer
from spark_pipelines.config import PipelineConfig
from spark_pipelines.io.delta import live_rows
from spark_pipelines.transforms.parse import COMMIT_TS


class Console:
    def __init__(self, rich: RichConsole | None = None) -> None:
        self.rich = rich or RichConsole(highlight=False)

    def step(self, message: str) -> None:
        self.rich.print(f"[bold cyan]==>[/] {message}")


def _tables_view(stats: dict[str, Any], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("table", "rows delivered", "rows/s", "bytes"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for name, values in sorted(stats.get("tables", {}).items()):
        table.add_row(name, str(values["rows"]), f"{values['rows_per_second']:.0f}", str(values["bytes"]))
    return table


def _lag(stats: dict[str, Any]) -> str:
    lag = stats.get("checkpoint_lag_seconds")
    return "-" if lag is None else f"{lag:.1f} s"


def caught_up_view(stats: dict[str, Any], detail: dict[str, Any], end: tuple[str, int]) -> Table:
    checkpoint = detail.get("checkpoint") or {}
    title = (f"changefeed {detail['id']}: {detail['state']}, checkpoint {checkpoint.get('file')}:"
             f"{checkpoint.get('pos')} of {end[0]}:{end[1]}, lag {_lag(stats)}")
    return _tables_view(stats, title)


def follow_view(stats: dict[str, Any], progress: dict[str, Any] | None, changes: int) -> Group:
    pipeline = Table(title="pipeline (Spark Structured Streaming)", title_justify="left")
    for column in ("micro-batch", "records", "records/s", "batch time"):
        pipeline.add_column(column, justify="right")
    if progress:
        duration = progress.get("durationMs", {}).get("triggerExecution", 0) / 1000
        pipeline.add_row(str(progress["batchId"]), str(progress["numInputRows"]),
                         f"{progress.get('processedRowsPerSecond') or 0:.0f}", f"{duration:.1f} s")
    title = (f"workload: {changes} row changes committed | changefeed {stats['id']}: {stats['state']}, "
             f"lag {_lag(stats)}")
    return Group(_tables_view(stats, title), pipeline)


def final_report(console: Console, spark: Any, server: MySQLServer, config: PipelineConfig, tables: tuple[str, ...],
                 stats: dict[str, Any]) -> bool:
    """Row counts, newest applied commit and a few rows per Delta table; True when all equal MySQL."""
    summary = Table(title=f"Delta tables under {config.target_path}", title_justify="left")
    for column in ("table", "Delta rows", "MySQL rows", "equal", "newest change applied", "lag"):
        summary.add_column(column)
    equal = True
    samples = []
    for table in tables:
        with server.connect("shop") as conn, conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            expected = {tuple(row) for row in cur.fetchall()}
        path = config.table_path("shop", table)
        delta = live_rows(spark, path)
        got = {tuple(row) for row in delta.collect()}
        newest_ms = spark.read.format("delta").load(path).agg(F.max(F.unix_millis(F.col(COMMIT_TS)))).first()[0]
        same = got == expected
        equal &= same
        newest = "-" if newest_ms is None else time.strftime("%H:%M:%S", time.localtime(newest_ms / 1000))
        lag = "-" if newest_ms is None else f"{time.time() - newest_ms / 1000:.0f} s"
        summary.add_row(f"shop.{table}", str(len(got)), str(len(expected)),
                        "[green]yes[/]" if same else "[red]NO[/]", newest, lag)
        samples.append(_sample(table, delta))
    console.rich.print(summary)
    for sample in samples:
        console.rich.print(sample)
    console.step(f"changefeed checkpoint lag behind MySQL: {_lag(stats)}; 'lag' above is the time since the "
                 "newest change a table holds was committed in MySQL (the workload has stopped, so it grows)")
    return equal


def _sample(table: str, delta: Any) -> Table:
    rows = delta.orderBy("id").limit(3).collect()
    view = Table(title=f"shop.{table}: first rows", title_justify="left")
    for column in delta.columns:
        view.add_column(column)
    for row in rows:
        view.add_row(*("NULL" if value is None else str(value) for value in row))
    return view
