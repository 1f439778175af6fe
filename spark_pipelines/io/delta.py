"""The Delta edge: one table per source table, kept equal to it by a sequence-guarded MERGE.

Each Delta table holds the source columns plus
- `_lakefeed_seq`      the commit sequence of the change that wrote the row (see transforms/parse.py);
- `_lakefeed_deleted`  true for a tombstone: the key was deleted at `_lakefeed_seq`;
- `_lakefeed_commit_ts` the MySQL commit time of that change.
A change is applied only when its sequence is strictly greater than the stored one, so replayed and
out-of-order changes do nothing. Deletes stay as tombstones (non-key columns NULL) so an older insert
replayed later cannot bring the row back; `purge_tombstones` removes those older than the topic's
retention. Readers use `live_rows` (or filter `NOT _lakefeed_deleted`).

Each MERGE carries Delta's idempotent-write identifiers (txnAppId, txnVersion) on the session that
runs it: a micro-batch re-run after a crash finds its version recorded and skips the write.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_pipelines.errors import TypeChangeError
from spark_pipelines.io.evolution import Change, plan_change
from spark_pipelines.schemas import ColumnType
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.rows import DELETE, OP, TableShape

DELETED = "_lakefeed_deleted"
SEQ_TYPE = T.StructType([
    T.StructField("ts", T.LongType()), T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()),
])
INTERNAL = (SEQ, DELETED, COMMIT_TS)
TABLE_PROPERTIES = {
    # Column mapping lets RENAME/DROP COLUMN follow MySQL without rewriting data files.
    "delta.columnMapping.mode": "name",
    "delta.enableTypeWidening": "true",
    # A MERGE that changes a few rows of a file marks them deleted in a small side file instead of
    # rewriting the whole file (Delta "Deletion vectors"); maintenance purges them (io/maintenance.py).
    "delta.enableDeletionVectors": "true",
}
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


@dataclass(frozen=True)
class Txn:
    """Delta idempotent-write identifiers for one write."""

    app_id: str
    version: int


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _unquoted(name: str) -> str:
    """`q`'s inverse (names without backticks are returned as they are)."""
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def table_ref(path: str) -> str:
    return f"delta.{q(path)}"


def exists(spark: Any, path: str) -> bool:
    return bool(DeltaTable.isDeltaTable(spark, path))


def table_properties(change_data_feed: bool = False) -> dict[str, str]:
    properties = dict(TABLE_PROPERTIES)
    if change_data_feed:
        properties["delta.enableChangeDataFeed"] = "true"
    return properties


def table_schema(shape: TableShape, extra: tuple[T.StructField, ...] = ()) -> T.StructType:
    """The Delta table's columns for `shape`: the source columns, then the bookkeeping ones."""
    return T.StructType([
        *[T.StructField(name, ctype.spark_type) for name, ctype in shape.columns],
        T.StructField(SEQ, SEQ_TYPE), T.StructField(DELETED, T.BooleanType()),
        T.StructField(COMMIT_TS, T.TimestampType()), *extra,
    ])


def create_empty(spark: Any, path: str, schema: T.StructType, properties: dict[str, str]) -> None:
    """An empty table of `schema` with `properties`, in one commit (if none is at `path` yet)."""
    builder = DeltaTable.createIfNotExists(spark).location(path)
    for field in schema.fields:
        builder = builder.addColumn(field.name, field.dataType)
    for key, value in properties.items():
        builder = builder.property(key, value)
    builder.execute()


def ensure_table(spark: Any, path: str, shape: TableShape, *, change_data_feed: bool = False) -> bool:
    """Create the table for `shape`, or add its new columns (at their place in the layout) and widen
    changed types. True when it created the table (which then holds no row)."""
    if not exists(spark, path):
        create_empty(spark, path, table_schema(shape), table_properties(change_data_feed))
        return True
    current = {field.name: field.dataType for field in spark.read.format("delta").load(path).schema}
    previous: str | None = None
    for name, ctype in shape.columns:
        if name not in current:
            # At its place in the rows' layout, so the table keeps MySQL's column order.
            add_column(spark, path, name, ctype.sql, first=previous is None, after=previous)
        else:
            follow_type(spark, path, name, current[name], ctype)
        previous = name
    return False


def add_column(spark: Any, path: str, name: str, sql_type: str, *, first: bool = False,
               after: str | None = None) -> None:
    """ADD COLUMNS at a position (Delta supports FIRST / AFTER with column mapping); else last."""
    position = " FIRST" if first else f" AFTER {q(after)}" if after else ""
    if sql_type.lower() == T.TimestampNTZType().simpleString():
        allow_timestamp_ntz(spark, path)
    spark.sql(f"ALTER TABLE {table_ref(path)} ADD COLUMNS ({q(name)} {sql_type}{position})")


def allow_timestamp_ntz(spark: Any, path: str) -> None:
    """Turn on Delta's timestampNtz table feature before a DATETIME column is added or a DATE column widened
    to one. Delta enables it by itself only at CREATE TABLE; an existing table refuses the change with
    DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT (found by the equality long run, seed 12). Setting it again is
    a no-op."""
    spark.sql(f"ALTER TABLE {table_ref(path)} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")


def follow_type(spark: Any, path: str, name: str, existing: Any, ctype: ColumnType) -> Any:
    """Widen the Delta column `name` (now `existing`) to hold MySQL's new type `ctype`, or refuse;
    returns the column's type afterwards."""
    decision, target = plan_change(existing, ctype.spark_type)
    if decision is Change.WIDEN:
        if isinstance(target, T.TimestampNTZType):
            allow_timestamp_ntz(spark, path)
        try:
            spark.sql(f"ALTER TABLE {table_ref(path)} ALTER COLUMN {q(name)} TYPE {target.simpleString()}")
        except Exception as exc:
            raise _type_error(path, name, existing, ctype.mysql_type, str(exc)) from exc
        return target
    if decision is Change.REFUSE:
        raise _type_error(path, name, existing, ctype.mysql_type, "Delta cannot widen this type")
    return existing


def _type_error(path: str, name: str, existing: Any, mysql_type: str, why: str) -> TypeChangeError:
    return TypeChangeError(
        f"table {path}: column {name!r} is {existing.simpleString()} in Delta and now {mysql_type!r} in "
        f"MySQL ({why.splitlines()[0]}). Recovery: stop the pipeline and follow 'Incompatible type "
        "changes' in docs/spark-pipelines.md (rewrite the column with the new type, or drop the Delta "
        "table and replay the topic from the earliest offset)")


@contextmanager
def idempotent(spark: Any, txn: Txn | None) -> Iterator[None]:
    """Tag the writes inside with (txnAppId, txnVersion) on this session, then clear the tags so
    that later, unrelated writes are not skipped."""
    if txn is None:
        yield
        return
    spark.conf.set(TXN_APP_ID, txn.app_id)
    spark.conf.set(TXN_VERSION, str(txn.version))
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)


def _insert_values(shape: TableShape) -> dict[str, str]:
    """What a change inserts for a key the table does not hold: the change itself, or a tombstone (key
    and bookkeeping only) for a delete. Expressions over the change, aliased `s`."""
    is_delete = f"s.{OP} = '{DELETE}'"
    values = {
        q(n): (f"s.{q(n)}" if n in shape.primary_key else f"IF({is_delete}, NULL, s.{q(n)})") for n in shape.names
    }
    return values | {SEQ: f"s.{SEQ}", COMMIT_TS: f"s.{COMMIT_TS}", DELETED: is_delete}


def merge_latest(spark: Any, path: str, latest: DataFrame, shape: TableShape, txn: Txn | None = None,
                 key_range: tuple[int, int] | None = None) -> None:
    """MERGE one change per key (see transforms/latest.py) into the table at `path`.

    `key_range` (least, greatest) bounds the first key column of every change: said in the merge
    condition about the target alone, it lets Delta skip the files whose min/max statistics lie outside
    it instead of joining the whole table ("data skipping" applies to a MERGE's target-only predicates)."""
    key = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in shape.primary_key)
    if key_range is not None:
        key = f"t.{q(shape.primary_key[0])} BETWEEN {int(key_range[0])} AND {int(key_range[1])} AND {key}"
    newer = f"s.{SEQ} > t.{SEQ}"
    is_delete = f"s.{OP} = '{DELETE}'"
    Assignments = dict[str, str | Column]
    meta: Assignments = {SEQ: f"s.{SEQ}", COMMIT_TS: f"s.{COMMIT_TS}"}
    tombstone: Assignments = {q(n): "NULL" for n in shape.names if n not in shape.primary_key}
    tombstone |= meta | {DELETED: "true"}
    upsert: Assignments = {q(n): f"s.{q(n)}" for n in shape.names}
    upsert |= meta | {DELETED: "false"}
    insert: Assignments = dict(_insert_values(shape))
    with idempotent(spark, txn):
        (DeltaTable.forPath(spark, path).alias("t")
         .merge(latest.alias("s"), key)
         .whenMatchedUpdate(condition=f"{newer} AND {is_delete}", set=tombstone)
         .whenMatchedUpdate(condition=newer, set=upsert)
         .whenNotMatchedInsert(values=insert)
         .execute())


def append_latest(spark: Any, path: str, latest: DataFrame, shape: TableShape, txn: Txn | None = None) -> None:
    """Write one change per key into a table that holds no row (just created): what `merge_latest`
    would write there, since every key is new (its not-matched insert, deletes as tombstones), as a plain
    Delta append: no join with the target, no touched-file search. An initial load, or the first batch
    after CREATE TABLE, is one append instead of a MERGE. Columns the table has beyond this layout are
    NULL, as a MERGE's insert leaves them; values are cast to the table's types, as MERGE assigns them."""
    # Matched to the table's columns by name, case-insensitively, as Spark resolves a MERGE's assignments.
    values = {_unquoted(name).lower(): value for name, value in _insert_values(shape).items()}
    target = spark.read.format("delta").load(path).schema
    source = latest.alias("s")
    columns = []
    for field in target.fields:
        value = values.get(field.name.lower())
        columns.append((F.lit(None) if value is None else F.expr(value)).cast(field.dataType).alias(field.name))
    with idempotent(spark, txn):
        source.select(*columns).write.format("delta").mode("append").save(path)


def live_rows(spark: Any, path: str) -> DataFrame:
    """The table as MySQL has it: no tombstones, no bookkeeping columns."""
    table: DataFrame = spark.read.format("delta").load(path)
    return table.where(~F.col(DELETED)).drop(*INTERNAL)


def purge_tombstones(spark: Any, path: str, older_than_seconds: int) -> None:
    """Remove tombstones whose delete committed more than `older_than_seconds` ago. Safe once no
    change older than the tombstone can still be read: keep it above the topic's retention.ms."""
    spark.sql(f"DELETE FROM {table_ref(path)} WHERE {DELETED} AND "
              f"{COMMIT_TS} < current_timestamp() - make_dt_interval(0, 0, 0, {int(older_than_seconds)})")
