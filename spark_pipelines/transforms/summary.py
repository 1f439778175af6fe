"""Everything the driver needs to know about a micro-batch, gathered by one Spark action.

A batch used to cost one job per question (is there a bad message? which DDL? which table layouts?);
each job re-reads the cached messages and pays the scheduling cost. `summary_rows` answers them in one
DataFrame of a few rows, told apart by `kind`:
- `bad`: the first message that is not a canal-JSON change (topic, partition, offset, value);
- `ddl`: every table DDL message (database, table, type, sql, sequence, commit time);
- `layout`: one row per (table, message layout), as transforms/shapes.shape_rows gives them;
- `count`: messages and newest commit time per table (transforms/counts.per_table), for the progress line.
`BatchSummary.of` splits the collected rows on the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.transforms.counts import per_table
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.shapes import shape_rows

KIND = "_lakefeed_kind"
BAD, DDL, LAYOUT, COUNT = "bad", "ddl", "layout", "count"


def summary_rows(messages: DataFrame, ddl_types: Sequence[str]) -> DataFrame:
    """The batch's bad message (at most one), its table DDL messages of `ddl_types`, its layouts."""
    bad = (messages.where(~F.col("valid")).select("topic", "partition", "offset", "value").limit(1)
           .withColumn(KIND, F.lit(BAD)))
    ddl = (messages.where(F.col("valid") & F.col("is_ddl") & F.col("type").isin(*ddl_types))
           .select("database", "table", "type", "sql", "session_time_zone", SEQ, COMMIT_TS)
           .withColumn(KIND, F.lit(DDL)))
    layouts = shape_rows(messages).withColumn(KIND, F.lit(LAYOUT))
    counts = per_table(messages).withColumn(KIND, F.lit(COUNT))
    return (bad.unionByName(ddl, allowMissingColumns=True).unionByName(layouts, allowMissingColumns=True)
            .unionByName(counts, allowMissingColumns=True))


@dataclass(frozen=True)
class BatchSummary:
    bad: Any | None  # a Row: topic, partition, offset, value
    ddl: tuple[Any, ...]  # Rows: database, table, type, sql, session_time_zone, _lakefeed_seq, _lakefeed_commit_ts
    layouts: tuple[Any, ...]  # Rows of shape_rows
    counts: tuple[Any, ...]  # Rows of per_table

    @classmethod
    def of(cls, rows: Iterable[Any]) -> BatchSummary:
        by_kind: dict[str, list[Any]] = {BAD: [], DDL: [], LAYOUT: [], COUNT: []}
        for row in rows:
            by_kind[row[KIND]].append(row)
        return cls(next(iter(by_kind[BAD]), None), tuple(by_kind[DDL]), tuple(by_kind[LAYOUT]),
                   tuple(by_kind[COUNT]))
