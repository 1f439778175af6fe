"""The change buffer of merge-on-read (`target.merge_every_seconds`): parsed canal-JSON messages waiting
for their MERGE, in one Delta table beside the tables (`<target.path>/_lakefeed/change_buffer`).

A micro-batch without table DDL is one append here (whatever the number of tables it touches). Every
`merge_every_seconds` a thread of its own (jobs/buffer_merger.py) applies the buffered messages through the
pipeline's usual batch function and deletes them from the buffer, while the stream goes on appending: the
merge never holds a micro-batch up. Between two merges the tables lag by up to that interval, and
`io/current.py` reads a table with the buffer's changes laid over it. The buffer holds messages as
`transforms/parse.py` parses them, so applying them later is applying the same messages later: the sequence
guard makes the result the one of applying them batch by batch.

Each buffered message carries the idempotent-write id of the job that appended it and its micro-batch id,
as the buffer's two partition columns, so that a merge takes, and afterwards deletes, exactly the messages of
the batches appended before it started (`through`), and none that a batch appends meanwhile. Messages another
checkpoint left (a replay, an earlier job) are always taken. Delta checks a delete against a concurrent
append by the partitions the delete reads (its predicate is on partition columns only, so the delete is a
metadata-only commit too): an append to a later batch's partition does not conflict with it, where an
unpartitioned buffer gets ConcurrentAppendException (Delta outside Databricks allows only the Serializable
isolation level: "delta.isolationLevel must be Serializable").

A buffer written before the tags (one table, unpartitioned) is merged whole by the first batch, then removed.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_pipelines.io.delta import exists
from spark_pipelines.io.log_trim import trim_log

BUFFER_DIR = "_lakefeed/change_buffer"
BUFFER_APP, BUFFER_BATCH = "_lakefeed_buffer_app", "_lakefeed_buffer_batch"  # who appended it, in which batch
BUFFER_PROPERTIES = {
    # Delta writes a checkpoint inline in every 10th commit (a micro-batch held up every ~10 s);
    # the buffer's log is replayed only from the last checkpoint, and its snapshots are updated commit by commit.
    "delta.checkpointInterval": "100",
    # Nothing reads an old version of the buffer: keep the removed files' tombstones an hour, not Delta's
    # week (a commit a second would pile them up in every checkpoint). The log's own files go sooner
    # (trim_log_if_due); Delta requires its retention to be at least the tombstones'.
    "delta.deletedFileRetentionDuration": "interval 1 hours",
    "delta.logRetentionDuration": "interval 1 hours",
    # No column statistics: every read of the buffer selects by its partition columns, whose values the log
    # holds anyway, so the statistics Delta gathers on a file's first 32 columns only cost the append (a
    # 22,000-message append took 0.41-0.65 s without them against 0.80-1.23 s with them; docs/benchmarks.md,
    # "Issue 22, twelfth round").
    "delta.dataSkippingNumIndexedCols": "0",
}


# Delta keeps a deleted file on storage until a VACUUM, and a merge deletes every file the buffer had: the
# merger vacuums the buffer this often (past the buffer's one-hour tombstone retention, so no file a reader of
# a recent snapshot or an append in flight still needs).
VACUUM_EVERY_S = 3600.0
# Delta's own log cleanup keeps the buffer's commits until the next day (io/log_trim.py): the merger deletes
# them itself this often, once a checkpoint after them is TRIM_GUARD_S old.
TRIM_EVERY_S = 30.0
TRIM_GUARD_S = 120.0


def buffer_location(target_path: str) -> str:
    return f"{target_path.rstrip('/')}/{BUFFER_DIR}"


def newest_version(spark: Any, path: str) -> int:
    """The version of the Delta table's newest commit."""
    newest = DeltaTable.forPath(spark, path).history(1).select("version").first()
    assert newest is not None, f"{path} is a Delta table without a commit"
    return int(newest[0])


def pending_messages(spark: Any, path: str, taken: Column | None = None) -> DataFrame | None:
    """The buffered messages (those `taken` selects, default all), without the buffer's own columns, or
    None when the buffer holds none.

    Read as of the buffer's newest version, pinned: after every write through a DataFrameWriter Spark
    rebuilds each cached plan that reads the written table (`SaveIntoDataSourceCommand` ->
    `CacheManager.recacheByPlan`), and the merge caches what it reads for its several actions. A read that
    follows the table's newest version made every append of the stream during a merge (a third of them at
    a 10 s interval) plan the cached read again, Delta's reconstruction of the buffer's whole file list
    included: 0.7 s an append instead of 0.2 s, and more as the buffer's checkpoint gathers an hour of
    tombstones (docs/benchmarks.md, "Issue 22, sixteenth round"). A pinned read is another relation to the
    cache manager, and it also keeps the merge's actions on one snapshot."""
    if not exists(spark, path):
        return None
    buffered: DataFrame = spark.read.format("delta").option("versionAsOf", newest_version(spark, path)).load(path)
    if taken is not None:
        buffered = buffered.where(taken)
    buffered = buffered.drop(BUFFER_APP, BUFFER_BATCH)
    return None if buffered.isEmpty() else buffered


class ChangeBuffer:
    """The buffer of one pipeline (its job's idempotent-write id `app_id`), and when it is next due for its
    MERGE. `append` runs on the stream's thread, `pending` and `merged` on whichever thread merges."""

    def __init__(self, path: str, merge_every_seconds: int, app_id: str, clock: Any = time.monotonic) -> None:
        self.path = path
        self.merge_every_seconds = merge_every_seconds
        self.app_id = app_id
        self._clock = clock
        self._merged_at = clock()
        self._state = threading.Lock()
        self._newest: int | None = None  # the newest batch this job appended
        self._oldest: int | None = None  # the oldest batch this job appended
        self._merged_through: int | None = None  # every batch up to this one has been merged and deleted
        self._unknown = True  # at start: an earlier run may have left changes
        self._legacy: bool | None = None  # written before the partition tags (unknown until asked)
        self._exists = False  # known once `legacy` has been asked
        self._vacuumed_at = clock()
        self._trimmed_at = clock()

    def due(self) -> bool:
        return bool(self._clock() - self._merged_at >= self.merge_every_seconds)

    def legacy(self, spark: Any) -> bool:
        """The buffer was written before its partition tags: merge it whole before appending anything."""
        if self._legacy is None:
            self._exists = exists(spark, self.path)
            detail = DeltaTable.forPath(spark, self.path).detail().first() if self._exists else None
            self._legacy = detail is not None and list(detail["partitionColumns"]) != [BUFFER_APP, BUFFER_BATCH]
        return self._legacy

    def append(self, spark: Any, messages: DataFrame, batch_id: int) -> None:
        """One Delta append of the batch's valid row changes, into the batch's partition (a blind append: no
        read of the buffer, so it never waits for or conflicts with a merge's delete).

        It carries no idempotent-write id: Delta checks one against the table's transactions at every
        append; without it, and with BUFFER_PROPERTIES, a warm buffered batch went from 1.96 to 1.65 s
        (bench/merge_on_read.py, docs/benchmarks.md "Issue 22, tenth round"). A batch re-run after a crash appends its
        changes again into its partition; the copies share their sequence, so the merge and `current_rows`,
        which keep the newest change per key (transforms/latest.py), read them as one, and the merge deletes
        them with their partition."""
        assert not self.legacy(spark)
        tagged = messages.where(F.col("valid") & ~F.col("is_ddl")).withColumns(
            {BUFFER_APP: F.lit(self.app_id), BUFFER_BATCH: F.lit(batch_id).cast("long")})
        writer = tagged.write.format("delta").mode("append").partitionBy(BUFFER_APP, BUFFER_BATCH)
        if not self._exists:
            writer = writer.options(**BUFFER_PROPERTIES)  # table properties are taken when the table is created
        writer.save(self.path)
        self._exists = True
        with self._state:
            self._newest = batch_id if self._newest is None else max(self._newest, batch_id)
            self._oldest = batch_id if self._oldest is None else min(self._oldest, batch_id)

    def _taken(self, through: int) -> Column:
        """The messages a merge of every batch up to `through` takes: those, and any another job left."""
        return (F.col(BUFFER_APP) != self.app_id) | (F.col(BUFFER_BATCH) <= through)

    def pending(self, spark: Any, through: int) -> DataFrame | None:
        """The messages of every batch up to `through` (and those other jobs left), or None."""
        if self.legacy(spark):
            return pending_messages(spark, self.path)
        with self._state:
            known_empty = not self._unknown and (self._newest is None or (
                self._merged_through is not None and self._newest <= self._merged_through))
        return None if known_empty else pending_messages(spark, self.path, self._taken(through))

    def first_unmerged(self, through: int) -> int:
        """The first batch a merge up to `through` applies, as far as this job knows: the one after its last
        merge, else the first it appended, else `through` (an earlier run's batches are not counted)."""
        with self._state:
            first = self._oldest if self._merged_through is None else self._merged_through + 1
            return through if first is None else min(first, through)

    def merged(self, spark: Any, through: int, deleting: bool = True) -> None:
        """What `pending(through)` gave has been applied: delete it from the buffer (a metadata-only commit)
        and start the next interval. A crash before this point applies the same changes again: they change
        nothing the second time. `deleting=False`: nothing was pending."""
        if self.legacy(spark):
            jvm = spark.sparkContext._jvm
            location = jvm.org.apache.hadoop.fs.Path(self.path)
            location.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(location, True)
            self._legacy = self._exists = False
        elif deleting and exists(spark, self.path):
            DeltaTable.forPath(spark, self.path).delete(self._taken(through))
        with self._state:
            self._unknown = False
            self._merged_through = through if self._merged_through is None else max(self._merged_through, through)
            self._merged_at = self._clock()

    def vacuum_if_due(self, spark: Any) -> bool:
        """Every VACUUM_EVERY_S, remove from storage the files of the batches merged more than the buffer's
        tombstone retention ago (Delta's VACUUM with the table's own retention). True when it ran."""
        if self._clock() - self._vacuumed_at < VACUUM_EVERY_S or not exists(spark, self.path):
            return False
        DeltaTable.forPath(spark, self.path).vacuum()
        self._vacuumed_at = self._clock()
        return True

    def trim_log_if_due(self, spark: Any) -> int:
        """Every TRIM_EVERY_S, delete the buffer's log files that no snapshot needs any more (io/log_trim.py).
        How many were deleted."""
        if self._clock() - self._trimmed_at < TRIM_EVERY_S or not self._exists:
            return 0
        self._trimmed_at = self._clock()
        return trim_log(spark, self.path, TRIM_GUARD_S)
