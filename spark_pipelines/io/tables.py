"""Table-level DDL on the Delta tables: CREATE TABLE, TRUNCATE/DROP TABLE (tombstones), RENAME TABLE (rows move).

A DDL at sequence S is applied between the rows before and after it (jobs/apply.py). Everything here
is replay-safe: applying a DDL again, or replaying the topic from a new checkpoint, leaves the tables
as the first run left them.
"""

from collections.abc import Mapping
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_pipelines.io.delta import (
    DELETED,
    SEQ_TYPE,
    create_empty,
    exists,
    table_properties,
    table_ref,
    table_schema,
)
from spark_pipelines.io.history import VALID_TO
from spark_pipelines.transforms.parse import SEQ
from spark_pipelines.transforms.rows import TableShape


def seq_literal(seq: Any) -> Column:
    """A stored `_lakefeed_seq` (a Row with ts, partition, offset) as a literal of the column's type."""
    return F.struct(
        F.lit(seq["ts"]).cast("long").alias("ts"),
        F.lit(seq["partition"]).cast("int").alias("partition"),
        F.lit(seq["offset"]).cast("long").alias("offset"),
    )


def empty_table(spark: Any, path: str, floor: Any) -> None:
    """TRUNCATE or DROP TABLE at `floor`: every older row becomes a tombstone at `floor`, so a replayed
    older insert cannot bring it back. Tombstones keep their old values: readers skip them (live_rows)
    and the guard needs only the sequence."""
    DeltaTable.forPath(spark, path).update(
        condition=F.col(SEQ) < seq_literal(floor), set={SEQ: seq_literal(floor), DELETED: F.lit(True)})


FLOOR_PROPERTY = "lakefeed.floor"


def table_floor(spark: Any, path: str) -> dict[str, int] | None:
    """The sequence below which changes belong to an earlier table by this name (one since renamed
    away or replaced): a replay must not apply them here. None when the name never changed hands."""
    rows = spark.sql(f"SHOW TBLPROPERTIES {table_ref(path)} ({FLOOR_PROPERTY})").collect()
    text = rows[0]["value"] if rows else ""
    if not text or text.startswith("Table "):  # "Table ... does not have property ..."
        return None
    ts, partition, offset = (int(part) for part in text.split(":"))
    return {"ts": ts, "partition": partition, "offset": offset}


def _floor_text(floor: Any) -> str:
    return f"{floor['ts']}:{floor['partition']}:{floor['offset']}"


def _set_floor(spark: Any, path: str, floor: Any) -> None:
    spark.sql(f"ALTER TABLE {table_ref(path)} SET TBLPROPERTIES ('{FLOOR_PROPERTY}' = '{_floor_text(floor)}')")


def _applied(spark: Any, path: str, floor: Any) -> bool:
    """The rename at `floor` already moved rows here (they carry `floor`), or later changes did."""
    table = spark.read.format("delta").load(path)
    return bool(table.where(F.col(SEQ) >= seq_literal(floor)).limit(1).count())


def move_tables(spark: Any, moves: Mapping[str, str], floor: Any, *, change_data_feed: bool = False) -> list[str]:
    """RENAME TABLE at `floor`: `moves` maps each target path to the path whose rows it takes over
    (several at once for chains and swaps). Each target is replaced by a table with its source's
    columns and rows, every row re-sequenced at `floor`, and `floor` recorded as the table's floor
    (so replayed changes of the tables the name held before do nothing, see table_floor). Sources are
    read in full before any target is written, so a swap works. A target already holding rows at or
    after `floor` was moved by an earlier run: skipped.
    Returns the targets written. The caller then empties each source that no longer exists."""
    staged: dict[str, DataFrame] = {}
    for target, source in moves.items():
        if not exists(spark, source) or (exists(spark, target) and _applied(spark, target, floor)):
            continue
        rows = (spark.read.format("delta").load(source).where(F.col(SEQ) < seq_literal(floor))
                .withColumn(SEQ, seq_literal(floor).cast(SEQ_TYPE)))
        staged[target] = rows.localCheckpoint(eager=True)  # the source may be rewritten before we write
    for target, rows in staged.items():
        _replace(spark, target, rows, floor, change_data_feed)
    return sorted(staged)


def _replace(spark: Any, target: str, rows: DataFrame, floor: Any, change_data_feed: bool) -> None:
    if not exists(spark, target):
        create_empty(spark, target, rows.schema, table_properties(change_data_feed))
    # The floor first: a crash before the rows are written redoes both (the target is not yet applied).
    _set_floor(spark, target, floor)
    # One commit replaces the rows and the columns the name held before (a dropped table's).
    rows.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(target)


def create_table(spark: Any, path: str, shape: TableShape, floor: Any, *, if_not_exists: bool,
                 history: bool = False, change_data_feed: bool = False) -> bool:
    """CREATE TABLE at `floor`: an empty table with the statement's columns, `floor` as its floor (the
    rows of a table dropped before under this name stay out, also in a replay). Nothing happens when
    the table holds a row at or after `floor` (applied before) or, for CREATE TABLE IF NOT EXISTS (which
    MySQL logs also when the table exists), a live row before it. A plain CREATE TABLE is logged only when
    the table did not exist, so live rows before it are gone in MySQL (the changefeed's snapshot taken
    again after a table changed: its CREATE TABLE comes before the rows as they are then). True when
    created."""
    schema = table_schema(shape, (T.StructField(VALID_TO, T.TimestampType()),) if history else ())
    if not exists(spark, path):
        # A name never used: the table, its properties and its floor in one commit.
        create_empty(spark, path, schema, {**table_properties(change_data_feed), FLOOR_PROPERTY: _floor_text(floor)})
        return True
    table = spark.read.format("delta").load(path)
    live = F.col(VALID_TO).isNull() if VALID_TO in table.columns else ~F.col(DELETED)
    kept = (F.col(SEQ) >= seq_literal(floor)) | (live if if_not_exists else F.lit(False))
    if table.where(kept).limit(1).count():
        return False
    _replace(spark, path, spark.createDataFrame([], schema), floor, change_data_feed)
    return True
