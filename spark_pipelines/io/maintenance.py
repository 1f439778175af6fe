"""Table maintenance after a micro-batch, on the cadence the config sets: OPTIMIZE (compacts the many
small files a MERGE per batch leaves), tombstone purge, purge of deletion vectors (REORG TABLE ...
APPLY (PURGE) rewrites the files that carry them, so readers stop merging them in), VACUUM."""

from collections.abc import Iterable
from typing import Any

from delta.tables import DeltaTable

from spark_pipelines.config import Maintenance
from spark_pipelines.io.delta import exists, purge_tombstones, table_ref


def maintain(spark: Any, paths: Iterable[str], maintenance: Maintenance, *, scd_type: int = 1) -> None:
    for path in paths:
        if not exists(spark, path):
            continue
        spark.sql(f"OPTIMIZE {table_ref(path)}")
        # History tables (SCD type 2) keep deletes as closed versions, not tombstones.
        if maintenance.purge_tombstones_after_seconds is not None and scd_type == 1:
            purge_tombstones(spark, path, maintenance.purge_tombstones_after_seconds)
        # After the tombstone purge, which itself may leave deletion vectors (Delta docs, "Deletion
        # vectors": REORG TABLE ... APPLY (PURGE)).
        spark.sql(f"REORG TABLE {table_ref(path)} APPLY (PURGE)")
        if maintenance.vacuum_retain_hours is not None:
            DeltaTable.forPath(spark, path).vacuum(float(maintenance.vacuum_retain_hours))
