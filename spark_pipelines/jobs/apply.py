"""One micro-batch of canal-JSON records -> Delta: reject bad messages, apply TRUNCATE and DROP TABLE,
then MERGE the newest change per key into each table.

TRUNCATE and DROP TABLE at sequence S turn every row older than S into a tombstone at S (so a replayed
older insert cannot bring it back) and drop the batch's changes older than S; changes after S apply
as usual. New columns and widened types follow from the row layouts (io/delta.ensure_table).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_pipelines.config import PipelineConfig
from spark_pipelines.errors import MessageError
from spark_pipelines.io.delta import DELETED, Txn, ensure_table, exists, merge_latest
from spark_pipelines.transforms.latest import latest_per_key
from spark_pipelines.transforms.parse import SEQ, parse_messages
from spark_pipelines.transforms.rows import changes_of
from spark_pipelines.transforms.shapes import fold_shapes, shape_rows

log = logging.getLogger(__name__)
EMPTYING_DDL = ("TRUNCATE", "ERASE")  # canal-JSON types of TRUNCATE TABLE and DROP TABLE


def app_id_for(checkpoint: str) -> str:
    """Delta's idempotent-write id: stable for one checkpoint (a re-run batch is skipped), new for a new
    one (a replay writes again, and the sequence guard makes it change nothing)."""
    return "lakefeed-" + hashlib.sha256(checkpoint.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BatchReport:
    batch_id: int
    tables: tuple[str, ...]


def _seq_literal(seq: Any) -> Column:
    return F.struct(
        F.lit(seq["ts"]).cast("long").alias("ts"),
        F.lit(seq["partition"]).cast("int").alias("partition"),
        F.lit(seq["offset"]).cast("long").alias("offset"),
    )


def _empty_table(spark: Any, path: str, floor: Any) -> None:
    # Tombstones keep their old values: readers skip them (live_rows) and the guard needs only the sequence.
    DeltaTable.forPath(spark, path).update(
        condition=F.col(SEQ) < _seq_literal(floor), set={SEQ: _seq_literal(floor), DELETED: F.lit(True)})


class ApplyBatch:
    """The foreachBatch function of the pipeline."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.app_id = app_id_for(config.checkpoint)
        self.reports: list[BatchReport] = []

    def __call__(self, records: DataFrame, batch_id: int) -> None:
        spark = records.sparkSession
        messages = parse_messages(records).persist()
        try:
            self.reports.append(self._apply(spark, messages, batch_id))
        finally:
            messages.unpersist()

    def _apply(self, spark: Any, messages: DataFrame, batch_id: int) -> BatchReport:
        bad = messages.where(~F.col("valid")).select("topic", "partition", "offset", "value").limit(1).collect()
        if bad:
            row = bad[0]
            raise MessageError(
                f"{row['topic']}[{row['partition']}]@{row['offset']} is not a canal-JSON change this pipeline "
                f"can apply: {str(row['value'])[:300]!r}. Fix the producer, or move the query's checkpoint "
                "past this offset")
        floors: dict[tuple[str, str], Any] = {}
        for row in (messages.where(F.col("is_ddl") & F.col("type").isin(*EMPTYING_DDL))
                    .groupBy("database", "table").agg(F.max(SEQ).alias("seq")).collect()):
            floors[(row["database"], row["table"])] = row["seq"]
        shapes = fold_shapes(shape_rows(messages).collect())
        for (database, table), floor in floors.items():
            path = self.config.table_path(database, table)
            if exists(spark, path):
                _empty_table(spark, path, floor)
                log.info("emptied %s.%s at %s", database, table, tuple(floor))
        counts = []
        for (database, table), shape in sorted(shapes.items()):
            path = self.config.table_path(database, table)
            ensure_table(spark, path, shape)
            changes = changes_of(messages, shape, self.config.source_time_zone)
            floor = floors.get((database, table))
            if floor is not None:
                changes = changes.where(F.col(SEQ) > _seq_literal(floor))
            latest = latest_per_key(changes, shape.primary_key)
            merge_latest(spark, path, latest, shape, Txn(self.app_id, batch_id))
            counts.append(f"{database}.{table}")
        report = BatchReport(batch_id, tuple(counts))
        log.info("batch %d applied to %d table(s)", batch_id, len(counts))
        return report


def start_query(spark: Any, records: DataFrame, config: PipelineConfig, *, once: bool = False) -> Any:
    """Start the streaming query; `once` (or trigger available_now) processes what is there and stops."""
    writer = (records.writeStream.foreachBatch(ApplyBatch(config))
              .option("checkpointLocation", config.checkpoint).queryName("lakefeed-apply"))
    if once or config.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=config.processing_time or "10 seconds")
    return writer.start()
