"""SCD type 2 tables: every version of every row, with the commit time it became valid and the commit
time it stopped being valid (`_lakefeed_valid_to`, NULL for the current version).

A batch's changes per key, in sequence order, become versions: each is valid until the key's next
change. The key's open version in Delta is closed at the commit time of its first new change, then the
new upserts are appended. Changes at or below the newest sequence Delta already holds for the key are
replays and are dropped, so re-running a batch or replaying the topic adds nothing; a delete closes
the open version and adds none. Read the table as MySQL has it with `current_rows`.
"""

from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_pipelines.io.delta import DELETED, INTERNAL, Txn, idempotent, q, table_ref
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.rows import OP, UPSERT, TableShape

VALID_TO = "_lakefeed_valid_to"


def ensure_history_column(spark: Any, path: str) -> None:
    names = {f.name for f in spark.read.format("delta").load(path).schema}
    if VALID_TO not in names:
        spark.sql(f"ALTER TABLE {table_ref(path)} ADD COLUMNS ({q(VALID_TO)} TIMESTAMP)")


def merge_history(spark: Any, path: str, changes: DataFrame, shape: TableShape, txn: Txn | None = None) -> None:
    """Apply typed changes (transforms/rows.changes_of) to the SCD type 2 table at `path`."""
    key = list(shape.primary_key)
    table = spark.read.format("delta").load(path)
    newest = table.groupBy(*key).agg(F.max(SEQ).alias("_newest"))
    fresh = (changes.dropDuplicates([*key, SEQ]).join(newest, key, "left")
             .where(F.col("_newest").isNull() | (F.col(SEQ) > F.col("_newest"))).drop("_newest"))
    order = Window.partitionBy(*key).orderBy(SEQ)
    versions = (fresh.withColumn(VALID_TO, F.lead(COMMIT_TS).over(order))
                .withColumn("_first", F.row_number().over(order) == 1)).persist()
    try:
        firsts = versions.where("_first").select(*key, F.col(COMMIT_TS).alias("_close_at"),
                                                  F.col(SEQ).alias("_first_seq"))
        on = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in key)
        (DeltaTable.forPath(spark, path).alias("t")
         .merge(firsts.alias("s"), f"{on} AND t.{VALID_TO} IS NULL AND t.{SEQ} < s._first_seq")
         .whenMatchedUpdate(set={VALID_TO: "s._close_at"})
         .execute())
        rows = versions.where(F.col(OP) == UPSERT).select(
            *[q(n) for n in shape.names], SEQ, F.lit(False).alias(DELETED), COMMIT_TS, VALID_TO)
        with idempotent(spark, txn):
            rows.write.format("delta").mode("append").save(path)
    finally:
        versions.unpersist()


def close_all(spark: Any, path: str, commit_ts: Any) -> None:
    """TRUNCATE / DROP TABLE in a history table: every open version ends at that commit."""
    DeltaTable.forPath(spark, path).update(
        condition=F.col(VALID_TO).isNull(), set={VALID_TO: F.lit(commit_ts).cast(T.TimestampType())})


def current_rows(spark: Any, path: str) -> DataFrame:
    """The table as MySQL has it now: the open version of every key, without bookkeeping columns."""
    table: DataFrame = spark.read.format("delta").load(path)
    return table.where(F.col(VALID_TO).isNull()).drop(*INTERNAL, VALID_TO)
