"""`spark-pipeline verify` on a large table: an equal Delta table, then a damaged one.

    .venv/bin/python bench/verify.py [--rows 1000000] [--chunk-size 10000] [--profile]

MariaDB gets `--rows` rows of a table with an INT key, VARCHARs (one nullable), a DECIMAL, a DOUBLE and
a DATETIME, made by one INSERT ... SELECT from MariaDB's SEQUENCE engine (`seq_1_to_N`,
https://mariadb.com/kb/en/sequence-storage-engine/). The Delta table in the pipeline's layout
(`_lakefeed_seq`, `_lakefeed_deleted`, `_lakefeed_commit_ts`, made by `ensure_table`) gets the same rows
from `spark.range` and the same expressions, plus a tombstone per 1000 rows (keys deleted in MySQL,
which verify must not count); that the two sides are equal is verify's own first answer.

Then `verify_table` (what `spark-pipeline verify` runs per table, with the same connection factory)
compares (a) the equal table: it must report equal; (b) the table after one row is changed, one deleted
and one added in Delta: it must report exactly those three keys. Side by side in the same run, the
baseline a verify cannot beat: a plain full read of both sides (`CHECKSUM TABLE` in MariaDB, a Spark
aggregate hashing every column of the Delta table's live rows).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakefeed_testing.mysql import MySQLServer, mysql_server
from lakefeed_testing.spark import build_spark_session
from spark_pipelines.config import PipelineConfig, load_config
from spark_pipelines.io.delta import DELETED, ensure_table, live_rows, table_ref
from spark_pipelines.schemas import column_type
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.rows import TableShape
from spark_pipelines.verify import TableResult, mysql_connector, verify_table

DATABASE, TABLE = "bench_verify", "items"  # the database: main's default; tests pass their own
COLUMNS = (("id", "int"), ("name", "varchar(40)"), ("price", "decimal(12,2)"), ("score", "double"),
           ("created", "datetime"), ("note", "varchar(20)"))
TOMBSTONE_EVERY = 1000


def _load_mysql(mysql: MySQLServer, database: str, rows: int) -> float:
    """The rows in MariaDB, from the SEQUENCE engine in one statement; seconds taken."""
    started = time.perf_counter()
    mysql.execute(f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(12,2) NOT NULL, "
                  "score DOUBLE NOT NULL, created DATETIME NOT NULL, note VARCHAR(20) NULL)", database=database)
    # Each expression has its twin in _delta_frame; `seq / 7e0` is a DOUBLE division on both sides.
    mysql.execute(f"INSERT INTO {TABLE} SELECT seq, CONCAT('name-', seq), (seq % 100000) / 100, seq / 7e0, "
                  "'2024-01-01 00:00:00' + INTERVAL seq * 37 SECOND, "
                  f"IF(seq % 7 = 0, NULL, CONCAT('n-', seq % 1000)) FROM seq_1_to_{rows}", database=database)
    return time.perf_counter() - started


def _delta_frame(spark: Any, rows: int) -> Any:
    from decimal import Decimal

    from pyspark.sql import functions as F

    n = F.col("id")
    live = spark.range(1, rows + 1).select(
        n.cast("int").alias("id"),
        F.concat(F.lit("name-"), n).alias("name"),
        ((n % 100000) * F.lit(Decimal("0.01"))).cast("decimal(12,2)").alias("price"),
        (n.cast("double") / F.lit(7.0)).alias("score"),
        F.expr("timestampadd(SECOND, id * 37, timestamp_ntz'2024-01-01 00:00:00')").alias("created"),
        F.when(n % 7 != 0, F.concat(F.lit("n-"), n % 1000)).alias("note"),
        F.struct(F.lit(1).cast("long").alias("ts"), F.lit(0).alias("partition"), n.alias("offset")).alias(SEQ),
        F.lit(False).alias(DELETED),
        F.current_timestamp().alias(COMMIT_TS),
    )
    # Keys deleted in MySQL stay in Delta as tombstones (non-key columns NULL): not rows.
    dead = spark.range(rows + 1, rows + 1 + rows // TOMBSTONE_EVERY).select(
        n.cast("int").alias("id"), *[F.lit(None).cast(column_type(t).spark_type).alias(c) for c, t in COLUMNS[1:]],
        F.struct(F.lit(2).cast("long").alias("ts"), F.lit(0).alias("partition"), n.alias("offset")).alias(SEQ),
        F.lit(True).alias(DELETED), F.current_timestamp().alias(COMMIT_TS))
    return live.unionByName(dead)


def _write_delta(spark: Any, path: str, database: str, rows: int) -> float:
    started = time.perf_counter()
    shape = TableShape(database, TABLE, tuple((c, column_type(t)) for c, t in COLUMNS), ("id",))
    ensure_table(spark, path, shape)
    _delta_frame(spark, rows).write.format("delta").mode("append").save(path)
    return time.perf_counter() - started


def _baseline(spark: Any, mysql: MySQLServer, database: str, path: str, rounds: int) -> tuple[float, float]:
    """Seconds for a plain full read of each side: CHECKSUM TABLE, and a Spark hash over every column.
    Best of `rounds`: the first Spark read also warms the JVM, which verify then finds warm."""
    from pyspark.sql import functions as F

    mysql_s = spark_s = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        mysql.execute(f"CHECKSUM TABLE {TABLE}", database=database)
        mysql_s = min(mysql_s, time.perf_counter() - started)
        started = time.perf_counter()
        frame = live_rows(spark, path)
        frame.agg(F.count("*"), F.sum(F.hash(*frame.columns))).collect()
        spark_s = min(spark_s, time.perf_counter() - started)
    return mysql_s, spark_s


def _config(work: Path, database: str) -> PipelineConfig:
    path = work / "pipeline.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": "127.0.0.1:9", "topics": ["unused"]},
        "target": {"path": str(work / "delta")}, "tables": {"include": [f"{database}.*"]},
        "checkpoint": str(work / "checkpoint")}))
    return load_config(path)


def _verify(spark: Any, mysql: MySQLServer, config: PipelineConfig, database: str, chunk_size: int,
            profile: bool) -> TableResult:
    connect = mysql_connector(f"mysql://{mysql.user}:{mysql.password}@{mysql.host}:{mysql.port}?tls=false")
    last = [time.perf_counter()]

    def progress(table: str, chunks: int, rows: int) -> None:
        if time.perf_counter() - last[0] >= 10:
            last[0] = time.perf_counter()
            click.echo(f"  {table}: {chunks} chunks, {rows:,} MySQL rows compared", err=True)

    if not profile:
        return verify_table(spark, connect, config, database, TABLE, chunk_size, progress)
    profiler = cProfile.Profile()
    result: TableResult = profiler.runcall(verify_table, spark, connect, config, database, TABLE, chunk_size,
                                           progress)
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(20)
    return result


def _damage(spark: Any, path: str, rows: int) -> set[tuple[str, tuple[int, ...]]]:
    """One row changed, one deleted, one added in Delta (one MERGE: a third of the time of three
    statements); the differences verify must report."""
    changed, deleted, added = rows // 2, rows // 3, 0
    spark.sql(f"""
        MERGE INTO {table_ref(path)} AS t
        USING (SELECT 'u' AS op, {changed} AS k UNION ALL SELECT 'd', {deleted} UNION ALL SELECT 'i', {added}) AS s
        ON t.id = s.k
        WHEN MATCHED AND s.op = 'u' THEN UPDATE SET name = 'damaged'
        WHEN MATCHED AND s.op = 'd' THEN DELETE
        WHEN NOT MATCHED THEN INSERT (id, name, price, score, created, note, {SEQ}, {DELETED}, {COMMIT_TS})
          VALUES (s.k, 'added', 1.25, 0.5, timestamp_ntz'2024-01-01 00:00:00', NULL,
                  named_struct('ts', 3L, 'partition', 0, 'offset', 0L), false, current_timestamp())""")
    return {("changed", (changed,)), ("missing", (deleted,)), ("extra", (added,))}


def run(spark: Any, mysql: MySQLServer, database: str, work: Path, rows: int, chunk_size: int,
        profile: bool = False, baseline_rounds: int = 2) -> bool:
    """Load, verify the equal table, damage it, verify again; print the results table. True when verify
    answered right both times. `database` exists and is empty."""
    click.echo(f"loading {rows:,} rows into MariaDB ...", err=True)
    load_s = _load_mysql(mysql, database, rows)
    config = _config(work, database)
    path = config.table_path(database, TABLE)
    click.echo(f"MariaDB loaded in {load_s:.1f} s; writing the Delta table ...", err=True)
    write_s = _write_delta(spark, path, database, rows)
    click.echo(f"Delta written in {write_s:.1f} s; baseline reads ...", err=True)
    mysql_s, spark_s = _baseline(spark, mysql, database, path, baseline_rounds)
    click.echo("verify, equal table ...", err=True)
    equal = _verify(spark, mysql, config, database, chunk_size, profile)
    click.echo("damaging the Delta table, verify again ...", err=True)
    expected = _damage(spark, path, rows)
    damaged = _verify(spark, mysql, config, database, chunk_size, False)
    found = {(d.kind, d.key) for d in damaged.rows}
    right = equal.equal and found == expected and sum(n for _, n in damaged.counts) == 3
    base = mysql_s + spark_s
    click.echo(f"\n{rows:,} rows, chunks of {chunk_size:,} (MariaDB load {load_s:.1f} s, Delta write {write_s:.1f} s)")
    click.echo(f"{'run':<50}{'rows':>11}{'chunks':>8}{'seconds':>9}{'rows/s':>10}{'vs baseline':>13}  result")
    for name, seconds in (("baseline: CHECKSUM TABLE (MariaDB)", mysql_s),
                          ("baseline: Spark hash of every column (Delta)", spark_s)):
        click.echo(f"{name:<50}{rows:>11,}{'':>8}{seconds:>9.1f}{rows / seconds:>10,.0f}")
    for name, result in (("verify, equal table", equal), ("verify, damaged (1 changed, 1 deleted, 1 added)", damaged)):
        outcome = "equal" if result.equal else ", ".join(f"{n} {kind}" for kind, n in result.counts)
        click.echo(f"{name:<50}{result.mysql_rows:>11,}{result.chunks:>8}{result.seconds:>9.1f}"
                   f"{result.mysql_rows / result.seconds:>10,.0f}{result.seconds / base:>12.1f}x  {outcome}")
    if not right:
        click.echo(f"UNEXPECTED: equal run {equal.counts} {equal.schema}; damaged run found {sorted(found)}, "
                   f"expected {sorted(expected)}")
    return right


@click.command()
@click.option("--rows", default=1_000_000, show_default=True, type=click.IntRange(min=10))
@click.option("--chunk-size", default=10_000, show_default=True, type=click.IntRange(min=1),
              help="verify's --chunk-size.")
@click.option("--profile", is_flag=True, help="Print where verify spends its time on the equal table (cProfile).")
def main(rows: int, chunk_size: int, profile: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as scratch, mysql_server() as mysql:
        spark = build_spark_session("bench-verify")
        spark.sparkContext.setLogLevel("ERROR")
        try:
            mysql.execute(f"CREATE DATABASE {DATABASE}")
            right = run(spark, mysql, DATABASE, Path(scratch), rows, chunk_size, profile)
        finally:
            spark.stop()
    sys.exit(0 if right else 1)


if __name__ == "__main__":
    main()
