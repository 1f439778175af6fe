"""Delta's VACUUM on a small table under a local session, with Spark's default file-listing parallelism
and with the one spark_pipelines/session.local_master_conf sets, side by side in one session.

    .venv/bin/python bench/vacuum.py [--rounds 3] [--appends 5]

Delta's VACUUM lists the table's directory with `spark.sql.sources.parallelPartitionDiscovery.parallelism`
tasks (VacuumCommand.gc passes it to DeltaFileOperations.recursiveListDirs); Spark's default is 10000, which
on `local[2]` is thousands of near-empty tasks for a table of a few files. The pipeline runs VACUUM on the
merge-on-read change buffer every hour (io/change_buffer.py) and on its tables when `vacuum_retain_hours`
is set (io/maintenance.py). Each round builds two fresh tables of `--appends` appends and one DELETE, then
vacuums one with each setting (alternating which goes first); it prints each time and the median ratio.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakefeed_testing.spark import build_spark_session
from spark_pipelines.session import LISTING_PARALLELISM, local_master_conf

SPARK_DEFAULT = "10000"  # SQLConf.PARALLEL_PARTITION_DISCOVERY_PARALLELISM's default


def _small_table(spark: object, appends: int) -> str:
    path = tempfile.mkdtemp(prefix="lakefeed-vacuum-")
    for i in range(appends):
        spark.range(i * 10, i * 10 + 10).write.format("delta").mode("append").save(path)  # type: ignore[attr-defined]
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 20")  # type: ignore[attr-defined]
    return path


def _vacuum_seconds(spark: object, path: str, parallelism: str) -> float:
    from delta.tables import DeltaTable

    spark.conf.set(LISTING_PARALLELISM, parallelism)  # type: ignore[attr-defined]
    started = time.perf_counter()
    DeltaTable.forPath(spark, path).vacuum()
    return time.perf_counter() - started


@click.command()
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(1, 50))
@click.option("--appends", default=5, show_default=True, type=click.IntRange(1, 200))
def main(rounds: int, appends: int) -> None:
    ours = local_master_conf("local[2]")[LISTING_PARALLELISM]
    spark = build_spark_session("bench-vacuum")
    spark.sparkContext.setLogLevel("ERROR")
    _vacuum_seconds(spark, _small_table(spark, 1), ours)  # warm-up: class loading and JIT, not timed
    times: dict[str, list[float]] = {SPARK_DEFAULT: [], ours: []}
    try:
        for round_no in range(rounds):
            order = [SPARK_DEFAULT, ours] if round_no % 2 == 0 else [ours, SPARK_DEFAULT]
            for parallelism in order:
                seconds = _vacuum_seconds(spark, _small_table(spark, appends), parallelism)
                times[parallelism].append(seconds)
                click.echo(f"round {round_no + 1}: listing parallelism {parallelism:>5}: VACUUM {seconds:6.2f} s")
    finally:
        spark.stop()
    default_s, ours_s = statistics.median(times[SPARK_DEFAULT]), statistics.median(times[ours])
    click.echo(f"median VACUUM: Spark's default {default_s:.2f} s, ours ({ours}) {ours_s:.2f} s, "
               f"{default_s / ours_s:.1f}x faster")


if __name__ == "__main__":
    main()
