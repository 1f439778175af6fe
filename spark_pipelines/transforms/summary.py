"""Everything the driver needs to know about a micro-batch, gathered by one Spark action.

A batch used to cost one job per question (is there a bad message? which DDL? which table layouts?);
each job re-reads the cached messages and pays the scheduling cost. `summary_rows` answers them in one
DataFrame of a few rows, told apart by `kind`:
- `bad`: the first message that is not a canal-JSON change (topic, partition, offset, value);
- `ddl`: every DDL message (database, table, type, sql, sequence, commit time);
- `layout`: one row per (table, message layout), as transforms/shapes.shape_rows gives them, with the
  count of row changes and their newest commit time;
- `count` (instead of `layout`, with `layouts=False`): one row per table, the count of its row changes and
  their newest commit time. A merge-on-read batch that only appends to the change buffer needs no layout:
  grouping on the layouts (four JSON texts a message) was half of its summary (0.50-0.68 s against
  0.20-0.41 s on 22,000 cached messages, docs/benchmarks.md "Issue 22, twelfth round").
`BatchSummary.of` splits the collected rows on the driver and adds up the progress line's counts per
table from the layouts (or counts) and the DDL rows: a separate aggregation for them cost the batch another
shuffle.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.shapes import shape_rows

KIND = "_lakefeed_kind"
BAD, DDL, LAYOUT, COUNT = "bad", "ddl", "layout", "count"


def summary_rows(messages: DataFrame, *, layouts: bool = True) -> DataFrame:
    """The batch's bad message (at most one), its DDL messages, its layouts (or, with `layouts=False`, its
    row changes counted per table)."""
    bad = (messages.where(~F.col("valid")).select("topic", "partition", "offset", "value").limit(1)
           .withColumn(KIND, F.lit(BAD)))
    ddl = (messages.where(F.col("valid") & F.col("is_ddl"))
           .select("database", "table", "type", "sql", "session_time_zone", SEQ, COMMIT_TS,
                   F.unix_millis(F.col(COMMIT_TS)).alias("newest_ms"))
           .withColumn(KIND, F.lit(DDL)))
    if layouts:
        tables = shape_rows(messages).withColumn(KIND, F.lit(LAYOUT))
    else:
        tables = (messages.where(F.col("valid") & ~F.col("is_ddl")).groupBy("database", "table")
                  .agg(F.count(F.lit(1)).alias("rows"), F.max(F.unix_millis(F.col(COMMIT_TS))).alias("newest_ms"))
                  .withColumn(KIND, F.lit(COUNT)))
    return bad.unionByName(ddl, allowMissingColumns=True).unionByName(tables, allowMissingColumns=True)


@dataclass(frozen=True)
class TableCount:
    """Valid messages of one table (row changes or DDL) in a batch, and their newest commit time."""

    database: str
    table: str | None  # None for DDL on a database
    is_ddl: bool
    rows: int
    newest_ms: int | None

    def plus(self, other: TableCount) -> TableCount:
        """Both counts of one table and kind together."""
        newest = max((ms for ms in (self.newest_ms, other.newest_ms) if ms is not None), default=None)
        return replace(self, rows=self.rows + other.rows, newest_ms=newest)


@dataclass(frozen=True)
class BatchSummary:
    bad: Any | None  # a Row: topic, partition, offset, value
    ddl: tuple[Any, ...]  # Rows: database, table, type, sql, session_time_zone, _lakefeed_seq, _lakefeed_commit_ts
    layouts: tuple[Any, ...]  # Rows of shape_rows (none when summed up without them)
    counts: tuple[TableCount, ...]

    @classmethod
    def of(cls, rows: Iterable[Any], ddl_types: Collection[str]) -> BatchSummary:
        """Split the collected rows; `ddl` keeps the DDL messages of `ddl_types` (the table DDL the batch
        applies), `counts` covers every DDL message and every row change."""
        by_kind: dict[str, list[Any]] = {BAD: [], DDL: [], LAYOUT: [], COUNT: []}
        for row in rows:
            by_kind[row[KIND]].append(row)
        counts: dict[tuple[str, str | None, bool], TableCount] = {}
        for count in ([TableCount(r["database"], r["table"], True, 1, r["newest_ms"]) for r in by_kind[DDL]]
                      + [TableCount(r["database"], r["table"], False, r["rows"], r["newest_ms"])
                         for r in by_kind[LAYOUT] + by_kind[COUNT]]):
            key = (count.database, count.table, count.is_ddl)
            counts[key] = counts[key].plus(count) if key in counts else count
        return cls(next(iter(by_kind[BAD]), None), tuple(r for r in by_kind[DDL] if r["type"] in ddl_types),
                   tuple(by_kind[LAYOUT]), tuple(counts.values()))
