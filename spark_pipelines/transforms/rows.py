"""Parsed messages of one table -> typed change rows, one per key touched.

Every change becomes an upsert (`_lakefeed_op` = 'U', the row after the change) or a delete ('D',
the key of the removed row). An UPDATE that changes the primary key removes the old key and writes
the new one, so it becomes a delete of the old key plus an upsert of the new key, both with the
update's sequence.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_pipelines.schemas import ColumnType, typed_value
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ

OP = "_lakefeed_op"
UPSERT, DELETE = "U", "D"


@dataclass(frozen=True)
class TableShape:
    """What the pipeline knows of one source table: columns in order, their types, the key."""

    database: str
    table: str
    columns: tuple[tuple[str, ColumnType], ...]
    primary_key: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.columns]

    def column_types(self) -> Mapping[str, ColumnType]:
        return dict(self.columns)


def changes_of(messages: DataFrame, shape: TableShape, source_time_zone: str = "UTC") -> DataFrame:
    """DML messages of `shape`'s table -> typed change rows: its columns, `_lakefeed_op`,
    `_lakefeed_seq`, `_lakefeed_commit_ts`."""
    mine = messages.where(
        F.col("valid") & ~F.col("is_ddl") & (F.col("database") == shape.database)
        & (F.col("table") == shape.table)
    )
    key_changed = _any_key_changed(shape.primary_key)

    def typed(source: Column) -> list[Column]:
        return [typed_value(source[name], ctype, source_time_zone).alias(name)
                for name, ctype in shape.columns]

    rows = mine.select(
        *typed(F.col("row")),
        F.when(F.col("type") == "DELETE", F.lit(DELETE)).otherwise(F.lit(UPSERT)).alias(OP), SEQ, COMMIT_TS,
    )
    # The old row: `old` holds the previous values (only the changed ones under TiCDC's
    # only-output-updated-columns), the rest are unchanged and read from `row`.
    old_row = F.map_from_arrays(
        F.array(*[F.lit(name) for name in shape.names]),
        F.array(*[F.when(F.map_contains_key(F.col("old"), name), F.col("old")[name])
                  .otherwise(F.col("row")[name]) for name in shape.names]),
    )
    old_keys = mine.where((F.col("type") == "UPDATE") & key_changed).select(
        *typed(old_row), F.lit(DELETE).alias(OP), SEQ, COMMIT_TS,
    )
    return rows.unionByName(old_keys)


def _any_key_changed(primary_key: Sequence[str]) -> Column:
    changed = F.lit(False)
    for name in primary_key:
        old_value = F.col("old")[name]
        in_old = F.coalesce(F.map_contains_key(F.col("old"), name), F.lit(False))
        changed = changed | (in_old & ~old_value.eqNullSafe(F.col("row")[name]))
    return changed
