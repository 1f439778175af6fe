"""Everything the driver needs to know about a micro-batch, gathered by one Spark action.

A batch used to cost one job per question (is there a bad message? which DDL? which table layouts?);
each job re-reads the cached messages and pays the scheduling cost. `summary_rows` answers them with one
aggregation: one row per (valid, is_ddl, table, message layout), as transforms/shapes.shape_rows groups row
changes, each with
- `rows` and `newest_ms`: how many messages, and their newest commit time (the progress line's counts);
- for row changes, the layout's `newest` sequence and first-key range (shape_rows' columns);
- `ddl`: the DDL messages of the group (database, table, type, sql, session time zone, sequence, commit
  time), none in a group of row changes;
- `bad`: for messages that are not canal-JSON changes, the first of them (topic, partition, offset, value).
With `layouts=False` the groups are (valid, is_ddl, table) only. A merge-on-read batch that only appends to
the change buffer needs no layout: grouping on the layouts (four JSON texts a message) was half of its
summary. One aggregation rather than a union of three queries also saves adaptive execution a job per part:
on 22,000 cached messages 0.50-0.68 s with layouts as a union, 0.20-0.41 s without layouts, 0.13-0.25 s as one
aggregation (docs/benchmarks.md, "Issue 22, twelfth round").
`BatchSummary.of` splits the collected rows on the driver.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.shapes import layout_aggregates, layout_keys, table_counts

_DDL_FIELDS = ("database", "table", "type", "sql", "session_time_zone", SEQ, COMMIT_TS)


def summary_rows(messages: DataFrame, *, layouts: bool = True) -> DataFrame:
    """The batch's groups of messages (see the module's docstring); `layouts=False` leaves the row changes'
    layouts out."""
    is_valid_ddl = F.col("valid") & F.col("is_ddl")
    ddl = F.struct(*_DDL_FIELDS, F.unix_millis(F.col(COMMIT_TS)).alias("newest_ms"))
    # min over a struct compares its fields in order: the bad message of the lowest (topic, partition, offset)
    bad = F.struct("topic", "partition", "offset", "value")
    keys: list[Column | str] = ["valid", "is_ddl", "database", "table", *(layout_keys() if layouts else [])]
    return messages.groupBy(*keys).agg(
        *(layout_aggregates() if layouts else table_counts()),
        F.collect_list(F.when(is_valid_ddl, ddl)).alias("ddl"),
        F.min(F.when(~F.col("valid"), bad)).alias("bad"),
    )


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
    layouts: tuple[Any, ...]  # Rows with shape_rows' columns (none when summed up without layouts)
    counts: tuple[TableCount, ...]

    @classmethod
    def of(cls, rows: Iterable[Any], ddl_types: Collection[str], *, layouts: bool = True) -> BatchSummary:
        """Split the collected rows of `summary_rows(..., layouts=layouts)`; `ddl` keeps the DDL messages of
        `ddl_types` (the table DDL the batch applies), `counts` covers every DDL message and every row change."""
        bad: list[Any] = []
        ddl: list[Any] = []
        shapes: list[Any] = []
        counts: dict[tuple[str, str | None, bool], TableCount] = {}
        for row in rows:
            if not row["valid"]:
                bad.append(row["bad"])
                continue
            if row["is_ddl"]:
                ddl += row["ddl"]
                found = [TableCount(d["database"], d["table"], True, 1, d["newest_ms"]) for d in row["ddl"]]
            else:
                shapes += [row] if layouts else []
                found = [TableCount(row["database"], row["table"], False, row["rows"], row["newest_ms"])]
            for count in found:
                key = (count.database, count.table, count.is_ddl)
                counts[key] = counts[key].plus(count) if key in counts else count
        first_bad = min(bad, key=lambda b: (b["topic"], b["partition"], b["offset"]), default=None)
        return cls(first_bad, tuple(d for d in ddl if d["type"] in ddl_types), tuple(shapes), tuple(counts.values()))
