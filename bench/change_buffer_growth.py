"""Does merge-on-read's change buffer get slower as its log grows? Many append and delete cycles on one buffer,
timed per hundred cycles, with no table, no Kafka and no merge work around them.

    .venv/bin/python bench/change_buffer_growth.py [--cycles 600] [--rows 400] [--merge-every 5]

Each cycle appends `--rows` messages as one micro-batch (io/change_buffer.ChangeBuffer.append, the stream's
write, into the batch's partition); every `--merge-every` cycles the merger's two buffer steps run: `pending`
(the read of the batches to merge) and `merged` (their delete, a metadata-only commit that leaves a tombstone
per file). Asked after a 30-minute live run whose micro-batches slowed down (docs/benchmarks.md, twelfth
round): if the tombstones the buffer keeps for an hour slowed each append, the medians here would climb.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import functions as F

from lakefeed_testing.spark import build_spark_session
from spark_pipelines.io.change_buffer import ChangeBuffer


@click.command()
@click.option("--cycles", type=click.IntRange(min=100), default=600, show_default=True,
              help="micro-batches appended")
@click.option("--rows", type=click.IntRange(min=1), default=400, show_default=True, help="messages per batch")
@click.option("--merge-every", type=click.IntRange(min=1), default=5, show_default=True,
              help="a read and delete of the batches so far every this many batches")
def main(cycles: int, rows: int, merge_every: int) -> None:
    spark = build_spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="lakefeed-buffer-growth-"))
    try:
        buffer = ChangeBuffer(str(work / "buffer"), merge_every_seconds=1, app_id="bench")
        messages = spark.range(rows).select(
            F.lit(True).alias("valid"), F.lit(False).alias("is_ddl"), F.col("id"),
            F.concat(F.lit("x" * 200), F.col("id").cast("string")).alias("payload"))
        buffer.legacy(spark)
        appends: list[float] = []
        reads: list[float] = []
        deletes: list[float] = []
        began = time.monotonic()
        click.echo("cycles  append median s  pending median s  delete median s  elapsed s")
        for cycle in range(cycles):
            started = time.monotonic()
            buffer.append(spark, messages, cycle)
            appends.append(time.monotonic() - started)
            if cycle % merge_every == merge_every - 1:
                started = time.monotonic()
                buffer.pending(spark, cycle)
                reads.append(time.monotonic() - started)
                started = time.monotonic()
                buffer.merged(spark, cycle)
                deletes.append(time.monotonic() - started)
            if cycle % 100 == 99:
                window = max(1, 100 // merge_every)
                click.echo(f"{cycle + 1:>6}  {statistics.median(appends[-100:]):>15.3f}  "
                           f"{statistics.median(reads[-window:]):>16.3f}  {statistics.median(deletes[-window:]):>15.3f}"
                           f"  {time.monotonic() - began:>9.0f}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
