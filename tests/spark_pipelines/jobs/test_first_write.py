"""The first rows into a table the job created are appended, later ones merged (jobs/apply.py `rowless`), with
the same result as merging throughout: through ApplyBatch on real Delta, with CREATE TABLE of several tables
before their rows (a snapshot's shape), a DDL of one table between its rows, and a batch re-run after a crash."""

from pathlib import Path
from typing import Any

from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows
from spark_pipelines.jobs.apply import ApplyBatch
from tests.spark_pipelines.canal import ddl, dml, records
from tests.spark_pipelines.jobs.flow import row_writes


def _row(table: str, kind: str, key: int, name: str, ts: int, old: dict[str, str] | None = None,
         types: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> str:
    return dml(table, kind, {"id": str(key), "name": name, **(extra or {})}, old=old, types=types,
               commit_ts=ts << 18, es=ts)


def test_created_tables_take_an_append_first_then_merges(spark: Any, tmp_path: Path) -> None:
    batch0 = [
        ddl("a", "CREATE", "CREATE TABLE a (id INT PRIMARY KEY, name VARCHAR(20))", commit_ts=1 << 18, es=1),
        ddl("b", "CREATE", "CREATE TABLE b (id INT PRIMARY KEY, name VARCHAR(20))", commit_ts=2 << 18, es=2),
        _row("a", "INSERT", 1, "a1", 3), _row("b", "INSERT", 1, "b1", 4), _row("a", "INSERT", 2, "a2", 5),
        _row("a", "UPDATE", 2, "a2x", 6, old={"name": "a2"}), _row("b", "INSERT", 2, "b2", 7),
        _row("b", "DELETE", 2, "b2", 8),
        # b changes its columns between its rows: its rows before are appended, the ones after merged
        ddl("b", "ALTER", "ALTER TABLE b ADD COLUMN n INT DEFAULT 7", commit_ts=9 << 18, es=9),
        _row("b", "INSERT", 3, "b3", 10, types={"id": "int", "name": "varchar(20)", "n": "int"}, extra={"n": "3"}),
        _row("a", "INSERT", 3, "a3", 11),
    ]
    batch1 = [_row("a", "UPDATE", 1, "a1x", 12, old={"name": "a1"}), _row("a", "DELETE", 3, "a3", 13)]
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "delta"), str(tmp_path / "ckpt"))
    apply = ApplyBatch(config)
    apply(records(spark, batch0), 0)
    a, b = config.table_path("shop", "a"), config.table_path("shop", "b")
    assert row_writes(spark, a) == ["APPEND"]  # created by its DDL; b's ALTER did not make it forget that
    assert row_writes(spark, b) == ["APPEND", "MERGE"]
    assert sorted(map(tuple, live_rows(spark, a).collect())) == [(1, "a1"), (2, "a2x"), (3, "a3")]
    assert sorted(map(tuple, live_rows(spark, b).collect())) == [(1, "b1", 7), (3, "b3", 3)]
    tombstones = spark.read.format("delta").load(b).where("_lakefeed_deleted").select("id", "name").collect()
    assert [tuple(r) for r in tombstones] == [(2, None)]

    apply(records(spark, batch1, partition=0).selectExpr("topic", "partition", "offset + 100 AS offset", "key",
                                                        "value"), 1)
    assert row_writes(spark, a) == ["APPEND", "MERGE"]
    assert sorted(map(tuple, live_rows(spark, a).collect())) == [(1, "a1x"), (2, "a2x")]

    # Batch 0 again from a new job (a restart after a crash before its checkpoint): nothing changes.
    stored = {path: sorted(map(str, spark.read.format("delta").load(path).collect())) for path in (a, b)}
    ApplyBatch(config)(records(spark, batch0), 0)
    assert {path: sorted(map(str, spark.read.format("delta").load(path).collect())) for path in (a, b)} == stored
