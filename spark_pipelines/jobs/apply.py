"""One micro-batch of canal-JSON records -> Delta: reject bad messages, then apply the batch in
segments cut at the schema changes it holds, so that every row is applied with the columns in force
at its commit.

Row changes of a segment are merged newest-per-key with the sequence guard (io/delta.merge_latest).
Between segments come the DDL the tables must follow: TRUNCATE and DROP TABLE at sequence S turn every
row older than S into a tombstone at S (so a replayed older insert cannot bring it back); ALTER TABLE
drops and renames columns (Delta column mapping). New columns and widened types need no DDL: the
rows' layout carries them (io/delta.ensure_table). Ordering DDL against rows of other partitions needs
the commit timestamp in every message (`enable-tidb-extension=true` on the changefeed).
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
from spark_pipelines.io.delta import DELETED, Txn, ensure_table, exists, merge_latest, q, table_ref
from spark_pipelines.io.history import close_all, ensure_history_column, merge_history
from spark_pipelines.transforms.column_ddl import DropColumn, column_changes
from spark_pipelines.transforms.latest import latest_per_key
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ, parse_messages
from spark_pipelines.transforms.rows import changes_of
from spark_pipelines.transforms.shapes import fold_shapes, shape_rows

log = logging.getLogger(__name__)
EMPTYING_DDL = ("TRUNCATE", "ERASE")  # canal-JSON types of TRUNCATE TABLE and DROP TABLE
TABLE_DDL = (*EMPTYING_DDL, "ALTER")
SEGMENTS_PER_BATCH = 10_000  # txnVersion = batch id * this + segment: increasing across batches


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


def _alter_columns(spark: Any, path: str, sql: str) -> None:
    """Replay-safe: dropping a missing column or renaming onto an existing one (re-added by replayed
    older rows) leaves the table as the DDL left MySQL."""
    for change in column_changes(sql):
        present = {f.name.lower() for f in spark.read.format("delta").load(path).schema}
        if isinstance(change, DropColumn):
            if change.name.lower() in present:
                spark.sql(f"ALTER TABLE {table_ref(path)} DROP COLUMN {q(change.name)}")
        elif change.old.lower() in present:
            if change.new.lower() in present:
                spark.sql(f"ALTER TABLE {table_ref(path)} DROP COLUMN {q(change.old)}")
            else:
                spark.sql(f"ALTER TABLE {table_ref(path)} RENAME COLUMN {q(change.old)} TO {q(change.new)}")


class ApplyBatch:
    """The foreachBatch function of the pipeline."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.app_id = app_id_for(config.checkpoint)
        self.last_report: BatchReport | None = None  # only the last: a stream runs for months

    def __call__(self, records: DataFrame, batch_id: int) -> None:
        spark = records.sparkSession
        messages = parse_messages(records).persist()
        try:
            self.last_report = self._apply(spark, messages, batch_id)
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
        ddl = [row for row in (messages.where(F.col("is_ddl") & F.col("type").isin(*TABLE_DDL))
                               .select("database", "table", "type", "sql", SEQ, COMMIT_TS).collect())
               if row["type"] in EMPTYING_DDL or column_changes(row["sql"] or "")]
        ddl.sort(key=lambda row: tuple(row[SEQ]))
        dml = messages.where(~F.col("is_ddl"))
        tables: set[str] = set()
        low: Any = None
        for index, boundary in enumerate([*ddl, None]):
            segment = dml if low is None else dml.where(F.col(SEQ) > _seq_literal(low))
            if boundary is not None:
                segment = segment.where(F.col(SEQ) < _seq_literal(boundary[SEQ]))
            # One Delta transaction id per segment: a re-run batch skips the merges it already made.
            tables |= self._merge(spark, segment, Txn(self.app_id, batch_id * SEGMENTS_PER_BATCH + index))
            if boundary is not None:
                self._apply_ddl(spark, boundary)
                low = boundary[SEQ]
        log.info("batch %d: %d table(s), %d schema change(s)", batch_id, len(tables), len(ddl))
        return BatchReport(batch_id, tuple(sorted(tables)))

    def _merge(self, spark: Any, segment: DataFrame, txn: Txn) -> set[str]:
        shapes = fold_shapes(shape_rows(segment).collect())
        for (database, table), shape in sorted(shapes.items()):
            path = self.config.table_path(database, table)
            ensure_table(spark, path, shape)
            changes = changes_of(segment, shape, self.config.source_time_zone)
            if self.config.scd_type == 2:
                ensure_history_column(spark, path)
                merge_history(spark, path, changes, shape, txn)
            else:
                merge_latest(spark, path, latest_per_key(changes, shape.primary_key), shape, txn)
        return {f"{database}.{table}" for database, table in shapes}

    def _apply_ddl(self, spark: Any, ddl: Any) -> None:
        path = self.config.table_path(ddl["database"], ddl["table"])
        if not exists(spark, path):
            return
        if ddl["type"] in EMPTYING_DDL and self.config.scd_type == 2:
            close_all(spark, path, ddl[COMMIT_TS])
        elif ddl["type"] in EMPTYING_DDL:
            _empty_table(spark, path, ddl[SEQ])
        else:
            _alter_columns(spark, path, ddl["sql"])
        log.info("applied %s to %s.%s: %s", ddl["type"], ddl["database"], ddl["table"], ddl["sql"][:200])


def start_query(spark: Any, records: DataFrame, config: PipelineConfig, *, once: bool = False) -> Any:
    """Start the streaming query; `once` (or trigger available_now) processes what is there and stops."""
    writer = (records.writeStream.foreachBatch(ApplyBatch(config))
              .option("checkpointLocation", config.checkpoint).queryName("lakefeed-apply"))
    if once or config.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=config.processing_time or "10 seconds")
    return writer.start()
