"""The Delta MERGE writer through real Delta: sequence guard, tombstones, idempotent batches."""

import random
import time
from pathlib import Path
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_pipelines.io.delta import (
    Txn,
    append_latest,
    ensure_table,
    live_rows,
    merge_latest,
    purge_tombstones,
)
from spark_pipelines.schemas import column_type
from spark_pipelines.transforms.latest import latest_per_key
from spark_pipelines.transforms.parse import parse_messages
from spark_pipelines.transforms.rows import TableShape, changes_of
from tests.spark_pipelines.canal import dml, records

TYPES = {"id": "int", "name": "varchar(20)"}
SHAPE = TableShape("shop", "users", tuple((n, column_type(t)) for n, t in TYPES.items()), ("id",))


def apply(spark: Any, path: str, values: list[str], txn: Txn | None = None, first_offset: int = 0) -> None:
    frame = records(spark, values).withColumn("offset", F.col("offset") + first_offset)
    changes = changes_of(parse_messages(frame), SHAPE)
    ensure_table(spark, path, SHAPE)
    merge_latest(spark, path, latest_per_key(changes, SHAPE.primary_key), SHAPE, txn)


def test_merge_applies_newer_changes_only_and_replays_change_nothing(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "users")
    history = [
        dml("users", "INSERT", {"id": "1", "name": "ann"}, es=1000),
        dml("users", "INSERT", {"id": "2", "name": "bob"}, es=1000),
        dml("users", "INSERT", {"id": "3", "name": "cy"}, es=1001),
        dml("users", "UPDATE", {"id": "2", "name": "bo"}, old={"name": "bob"}, es=1002),
        dml("users", "DELETE", {"id": "3", "name": "cy"}, es=1003),
        dml("users", "UPDATE", {"id": "4", "name": "ann"}, old={"id": "1"}, es=1004),
    ]
    apply(spark, path, history[:3], Txn("app", 0))
    apply(spark, path, history[3:], Txn("app", 1), first_offset=3)
    expected = spark.createDataFrame([(2, "bo"), (4, "ann")], "id INT, name STRING")
    assertDataFrameEqual(live_rows(spark, path), expected)
    stored = spark.read.format("delta").load(path).collect()

    # Replaying every record (same offsets, new batch ids) and older records out of order: no change.
    apply(spark, path, history, Txn("app", 2))
    apply(spark, path, list(reversed(history[:3])), Txn("app", 3))
    assertDataFrameEqual(
        spark.read.format("delta").load(path), spark.createDataFrame(stored, stored_schema(spark, path))
    )

    # A batch re-run after a crash reuses its txnVersion: Delta skips it, even with other content.
    versions = DeltaTable.forPath(spark, path).history().count()
    apply(spark, path, [dml("users", "INSERT", {"id": "9", "name": "zed"}, es=2000)], Txn("app", 3))
    assert DeltaTable.forPath(spark, path).history().count() == versions
    assertDataFrameEqual(live_rows(spark, path), expected)


def stored_schema(spark: Any, path: str) -> Any:
    return spark.read.format("delta").load(path).schema


def test_tombstones_block_resurrection_until_purged(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "users")
    now_ms = int(time.time() * 1000)
    insert = dml("users", "INSERT", {"id": "1", "name": "ann"}, es=now_ms)
    apply(spark, path, [insert, dml("users", "DELETE", {"id": "1", "name": "ann"}, es=now_ms + 1)])
    tombstones = spark.read.format("delta").load(path).where("_lakefeed_deleted")
    assert [(r.id, r.name) for r in tombstones.collect()] == [(1, None)]
    purge_tombstones(spark, path, older_than_seconds=3600)  # too young: kept
    apply(spark, path, [insert])  # replayed insert: still deleted
    assert live_rows(spark, path).count() == 0
    purge_tombstones(spark, path, older_than_seconds=0)
    assert spark.read.format("delta").load(path).count() == 0


def test_datetime_columns_join_a_table_created_without_one(spark: Any, tmp_path: Path) -> None:
    """MySQL ADD COLUMN ... DATETIME and DATE -> DATETIME on a Delta table that had no TIMESTAMP_NTZ column:
    Delta needs its timestampNtz feature turned on first (it refused both, DELTA_FEATURES_REQUIRE_MANUAL_
    ENABLEMENT, before; the equality long run's seed 12)."""
    base = TableShape("shop", "events", (("id", column_type("int")), ("day", column_type("date"))), ("id",))
    for case in ("add", "widen"):
        path = str(tmp_path / case)
        ensure_table(spark, path, base)
        if case == "add":
            columns = (*base.columns, ("seen", column_type("datetime(3)")))
        else:
            columns = (base.columns[0], ("day", column_type("datetime")))
        ensure_table(spark, path, TableShape("shop", "events", columns, ("id",)))
        fields = {f.name: f.dataType.simpleString() for f in spark.read.format("delta").load(path).schema}
        assert fields["seen" if case == "add" else "day"] == "timestamp_ntz", fields


def _random_history(seed: int, changes: int) -> list[str]:
    """Seeded changes over a few keys as MySQL logs them: inserts of absent keys, updates (some moving the
    key), deletes, several per key, so the newest per key is each kind."""
    rng = random.Random(seed)
    live: dict[int, str] = {}
    history = []
    for n in range(changes):
        es = 1000 + n
        key = rng.randrange(12)
        if key not in live:
            live[key] = f"n{n}"
            history.append(dml("users", "INSERT", {"id": str(key), "name": live[key]}, es=es))
        elif rng.random() < 0.3:
            history.append(dml("users", "DELETE", {"id": str(key), "name": live.pop(key)}, es=es))
        elif rng.random() < 0.2 and (moved := rng.randrange(12, 20)) not in live:
            live[moved] = live.pop(key)
            history.append(dml("users", "UPDATE", {"id": str(moved), "name": live[moved]}, old={"id": str(key)},
                               es=es))
        else:
            old, live[key] = live[key], f"u{n}"
            history.append(dml("users", "UPDATE", {"id": str(key), "name": live[key]}, old={"name": old}, es=es))
    return history


def test_a_table_without_rows_takes_an_append_equal_to_the_merge(spark: Any, tmp_path: Path) -> None:
    """The first write into a table that holds no row is an append (jobs/apply.py): it must store exactly
    what the MERGE stores there (live rows, tombstones, sequences), match columns by name as the MERGE does
    (case-insensitively), leave columns beyond the layout NULL as the MERGE's insert does, and be skipped
    when its batch is re-run (Delta's idempotent-write ids)."""
    # The table spells a column in another case than the rows (MySQL names are case-insensitive, and so is
    # the MERGE's resolution) and has a column this batch's layout lacks.
    columns = (SHAPE.columns[0], ("Name", SHAPE.columns[1][1]), ("extra", column_type("int")))
    wider = TableShape("shop", "users", columns, ("id",))
    for seed in range(3):
        tables = {}
        for how in ("append", "merge"):
            path = tables[how] = str(tmp_path / f"{how}-{seed}")
            assert ensure_table(spark, path, wider)  # created
            changes = changes_of(parse_messages(records(spark, _random_history(seed, 60))), SHAPE)
            latest = latest_per_key(changes, SHAPE.primary_key)
            write = append_latest if how == "append" else merge_latest
            write(spark, path, latest, SHAPE, Txn("app", 0))
        appended = spark.read.format("delta").load(tables["append"])
        assert appended.where("_lakefeed_deleted").count() > 0, "the history must end some keys deleted"
        assertDataFrameEqual(appended, spark.read.format("delta").load(tables["merge"]))

    # Re-run with the same transaction id (a batch after a crash): nothing is appended twice.
    path = tables["append"]
    stored = spark.read.format("delta").load(path).collect()
    versions = DeltaTable.forPath(spark, path).history().count()
    append_latest(spark, path, latest, SHAPE, Txn("app", 0))
    assert DeltaTable.forPath(spark, path).history().count() == versions
    assertDataFrameEqual(spark.read.format("delta").load(path),
                         spark.createDataFrame(stored, stored_schema(spark, path)))
