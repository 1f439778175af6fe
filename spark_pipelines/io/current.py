"""Read a table as MySQL has it now under merge-on-read: the Delta table's live rows, with the change
buffer's changes that are newer laid over them (io/change_buffer.py).

For each key the buffer touches, its newest buffered change wins over the stored row when its sequence is
greater, exactly the rule the MERGE applies (io/delta.py), so this read equals what the table will hold
once the buffer is merged. Without buffered changes for the table it is `live_rows`. Columns a buffered
layout has and the table does not yet (an ADD COLUMN whose rows wait in the buffer) come after the table's.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.config import PipelineConfig
from spark_pipelines.errors import ConfigError
from spark_pipelines.io.change_buffer import buffer_location, pending_messages
from spark_pipelines.io.delta import DELETED, INTERNAL, exists, live_rows, q
from spark_pipelines.io.tables import seq_literal, table_floor
from spark_pipelines.transforms.latest import latest_per_key
from spark_pipelines.transforms.parse import SEQ
from spark_pipelines.transforms.rows import OP, UPSERT, changes_of
from spark_pipelines.transforms.shapes import fold_shapes, shape_rows

_STORED_SEQ = "_lakefeed_stored_seq"


def current_rows(spark: Any, config: PipelineConfig, database: str, table: str) -> DataFrame:
    """The rows of source table `database`.`table` (its MySQL name, before tables.rename) as of the newest
    change the pipeline has read: what the table holds plus what waits in the change buffer."""
    if config.target_path is None:
        raise ConfigError("current_rows reads merge-on-read tables, which need a path target (target.path)")
    path = config.table_path(database, table)
    pending = pending_messages(spark, buffer_location(config.target_path))
    mine = None if pending is None else pending.where(
        F.col("valid") & ~F.col("is_ddl") & (F.col("database") == database) & (F.col("table") == table))
    layouts = [] if mine is None else shape_rows(mine).collect()
    if not layouts:
        return live_rows(spark, path)
    assert mine is not None
    shape = fold_shapes(layouts)[(database, table)]
    changes = changes_of(mine, shape, config.source_time_zone)
    stored_table = exists(spark, path)
    if stored_table and (floor := table_floor(spark, path)) is not None:
        changes = changes.where(F.col(SEQ) > seq_literal(floor))
    latest = latest_per_key(changes, shape.primary_key)
    if not stored_table:
        return latest.where(F.col(OP) == UPSERT).select(*(q(name) for name in shape.names))
    stored = spark.read.format("delta").load(path)
    key = list(shape.primary_key)
    # The buffered change applies where the stored row is older (or absent), as the MERGE's guard says.
    seen = stored.select(*(F.col(q(k)).alias(f"_k_{i}") for i, k in enumerate(key)), F.col(SEQ).alias(_STORED_SEQ))
    on = [latest[q(k)] == seen[f"_k_{i}"] for i, k in enumerate(key)]
    newer = (latest.join(seen, on, "left")
             .where(F.col(_STORED_SEQ).isNull() | (F.col(SEQ) > F.col(_STORED_SEQ)))
             .drop(*(f"_k_{i}" for i in range(len(key))), _STORED_SEQ))
    kept = stored.join(newer.select(*(F.col(q(k)).alias(f"_k_{i}") for i, k in enumerate(key))),
                       [stored[q(k)] == F.col(f"_k_{i}") for i, k in enumerate(key)], "left_anti")
    columns = [name for name in stored.columns if name not in INTERNAL]
    columns += [name for name in shape.names if name not in columns]
    # The table's types where it has the column (a MERGE casts to them too), else the layout's.
    types = {**{name: ctype.spark_type for name, ctype in shape.columns},
             **{field.name: field.dataType for field in stored.schema.fields}}

    def cast(frame: DataFrame, name: str) -> Any:
        value = F.col(q(name)) if name in frame.columns else F.lit(None)
        return value.cast(types[name]).alias(name)

    live = kept.where(~F.col(DELETED))
    upserts = newer.where(F.col(OP) == UPSERT)
    result: DataFrame = live.select(*(cast(live, n) for n in columns)).unionByName(
        upserts.select(*(cast(upserts, n) for n in columns)))
    return result
