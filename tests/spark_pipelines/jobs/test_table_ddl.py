"""Table-level DDL through ApplyBatch on real Delta: CREATE TABLE makes the table (also over a dropped one with other
columns; IF NOT EXISTS on a live one does nothing, a plain one drops the rows before it), RENAME TABLE (plain, onto
a dropped name, a swap) moves rows, the tables config filters and renames, DROP TABLE per policy; applying the
batch again from a new checkpoint (a replay) changes nothing."""

from pathlib import Path
from typing import Any

from spark_pipelines.config import Maintenance, PipelineConfig, SourceConfig, TableRules
from spark_pipelines.io.delta import exists, live_rows
from spark_pipelines.jobs.apply import ApplyBatch
from tests.spark_pipelines.canal import ddl, dml, records


def _ins(table: str, key: int, name: str, ts: int) -> str:
    return dml(table, "INSERT", {"id": str(key), "name": name}, commit_ts=ts << 18, es=ts)


def _ddl(table: str, kind: str, sql: str, ts: int) -> str:
    return ddl(table, kind, sql, commit_ts=ts << 18, es=ts)


BATCH = [
    _ins("a", 1, "a1", 1), _ins("a", 2, "a2", 2), _ins("b", 1, "old b", 3), _ins("c", 7, "c7", 4),
    _ins("tmp_x", 1, "excluded", 5), _ins("d", 1, "d1", 6), _ins("e", 1, "e1", 7),
    _ddl("b", "ERASE", "DROP TABLE b", 10),
    _ddl("b", "RENAME", "RENAME TABLE a TO b", 11),  # one message, with the new name (TiCDC)
    _ins("b", 3, "b3", 12),
    dml("b", "UPDATE", {"id": "1", "name": "a1 in b"}, old={"name": "a1"}, commit_ts=13 << 18, es=13),
    # A swap: b and c exchange names through tmp, one message per pair as TiCDC splits it.
    *[_ddl(new, "RENAME", f"RENAME TABLE `shop`.`{old}` TO `shop`.`{new}`", 14)
      for old, new in (("b", "tmp"), ("c", "b"), ("tmp", "c"))],
    _ins("c", 4, "c4", 15),
    _ddl("d", "ERASE", "DROP TABLE d", 16),
    _ddl("e", "RENAME", "ALTER TABLE e RENAME TO tmp_e", 17),  # renamed into the excluded names
    _ddl("f", "CREATE", "CREATE TABLE f (id INT PRIMARY KEY, amount DECIMAL(8,2) NOT NULL)", 18),
    _ins("g", 1, "old g", 19), _ddl("g", "ERASE", "DROP TABLE g", 20),
    _ddl("g", "CREATE", "CREATE TABLE g (id INT PRIMARY KEY, qty INT)", 21),
    dml("g", "INSERT", {"id": "5", "qty": "1"}, types={"id": "int", "qty": "int"}, commit_ts=22 << 18, es=22),
    _ins("h", 1, "h1", 23), _ddl("h", "CREATE", "CREATE TABLE IF NOT EXISTS h (id INT PRIMARY KEY, x INT)", 24),
    # A snapshot taken again (a table changed under the first one): its CREATE TABLE, then the rows as they are
    # then; k1 was deleted in between.
    _ins("k", 1, "k1", 25), _ins("k", 2, "k2", 25),
    _ddl("k", "CREATE", "CREATE TABLE `k` (\n  `id` int(11) NOT NULL,\n  `name` varchar(9) DEFAULT NULL,\n"
                        "  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", 26),
    _ins("k", 2, "k2", 26),
]


def _config(tmp_path: Path, checkpoint: str, on_drop: str = "tombstone", optimize: int = 0) -> PipelineConfig:
    return PipelineConfig(
        SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "delta"), str(tmp_path / checkpoint),
        on_drop_table=on_drop,
        tables=TableRules(exclude=("shop.tmp_*",), renames=(("shop.c", "crm.customers"),)),
        maintenance=Maintenance(optimize_every_batches=optimize),
    )


def _snapshot(spark: Any, config: PipelineConfig) -> dict[str, list[tuple[Any, ...]]]:
    found = {}
    for table in ("a", "b", "c", "d", "e", "f", "g", "h", "k", "tmp", "tmp_x", "tmp_e"):
        path = config.table_path("shop", table)
        if exists(spark, path):
            rows = live_rows(spark, path)
            found[table] = [tuple(f.simpleString() for f in rows.schema), *sorted(tuple(r) for r in rows.collect())]
    return found


def test_rename_drop_and_table_rules_then_replay(spark: Any, tmp_path: Path) -> None:
    frame = records(spark, BATCH)
    config = _config(tmp_path, "ckpt-1")
    ApplyBatch(config)(frame, 0)
    columns = ("id:int", "name:string")
    expected = {
        "a": [columns],  # renamed away
        "b": [columns, (7, "c7")],  # c's rows, after the swap
        "c": [columns, (1, "a1 in b"), (2, "a2"), (3, "b3"), (4, "c4")],  # a -> b -> (swap) c, at crm/customers
        "d": [columns],  # dropped: tombstones
        "e": [columns],  # renamed to an excluded name: its rows leave with it
        "f": [("id:int", "amount:decimal(8,2)")],  # created before any row
        "g": [("id:int", "qty:int"), (5, 1)],  # dropped, created again with other columns
        "h": [columns, (1, "h1")],  # CREATE TABLE IF NOT EXISTS on a live table changes nothing
        "k": [columns, (2, "k2")],  # a plain CREATE TABLE: MySQL had no table k (and no k1) before it
        "tmp": [columns],  # the swap's stepping stone: held b's rows between two of its pairs, none now
    }
    assert _snapshot(spark, config) == expected
    assert config.table_path("shop", "c").endswith("/crm/customers")

    ApplyBatch(_config(tmp_path, "ckpt-2"))(frame, 0)  # a replay from a new checkpoint
    assert _snapshot(spark, config) == expected

    # DROP TABLE with on_drop_table: ignore keeps the rows; maintenance due after every batch: OPTIMIZE.
    ignoring = _config(tmp_path / "ignore", "ckpt", on_drop="ignore", optimize=1)
    rows = [_ins("d", 1, "d1", 6), _ddl("d", "ALTER", "ALTER TABLE d RENAME COLUMN name TO label", 7),
            dml("d", "INSERT", {"id": "2", "label": "d2"}, commit_ts=8 << 18, es=8),
            _ddl("d", "ERASE", "DROP TABLE d", 16)]
    ApplyBatch(ignoring)(records(spark, rows), 0)
    assert _snapshot(spark, ignoring)["d"] == [("id:int", "label:string"), (1, "d1"), (2, "d2")]
    path = ignoring.table_path("shop", "d")
    assert "OPTIMIZE" in {r[0] for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("operation").collect()}
