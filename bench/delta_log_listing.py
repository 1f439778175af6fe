"""What a long `_delta_log` costs every append and read of a Delta table on a Hadoop file system (the local
disk here), and so what io/log_trim.py saves merge-on-read's change buffer.

    .venv/bin/python bench/delta_log_listing.py [--files 0,1000,4000,10000] [--rounds 5]

Delta's `HadoopFileSystemLogStore.listFrom` lists the whole log directory and keeps the names from a version on
(delta-io/delta#1191, #2684); every snapshot update calls it, and an append updates the snapshot before and
after its commit. One small table, its log padded step by step with N more files (each with the hidden `.crc`
the local file system writes beside a file, as a long log has them) that Delta lists and skips; per size the
median of `--rounds` one-row appends and of as many reads (`count()`), after one of each to warm up.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakefeed_testing.spark import build_spark_session


def _median_s(action: Callable[[], object], rounds: int) -> float:
    action()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


@click.command()
@click.option("--files", default="0,1000,4000,10000", show_default=True,
              help="Comma-separated numbers of extra files in the log directory (each with its hidden .crc).")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True)
def main(files: str, rounds: int) -> None:
    sizes = sorted(int(n) for n in files.split(","))
    spark = build_spark_session("bench-delta-log-listing", "local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="lakefeed-log-listing-"))
    try:
        table = str(work / "table")
        spark.range(1).write.format("delta").save(table)
        log_dir = work / "table" / "_delta_log"
        click.echo("extra log files (+ hidden .crc)  append median s  read median s")
        padded = 0
        for size in sizes:
            for i in range(padded, size):
                (log_dir / f"padding-{i:08d}.txt").touch()
                (log_dir / f".padding-{i:08d}.txt.crc").touch()
            padded = size
            append = _median_s(lambda: spark.range(1).write.format("delta").mode("append").save(table), rounds)
            read = _median_s(lambda: spark.read.format("delta").load(table).count(), rounds)
            click.echo(f"{size:>31,}  {append:>15.3f}  {read:>13.3f}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
