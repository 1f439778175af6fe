"""The change buffer of merge-on-read (`target.merge_every_seconds`): parsed canal-JSON messages waiting
for their MERGE, in one Delta table beside the tables (`<target.path>/_lakefeed/change_buffer`).

A micro-batch without table DDL is one append here (whatever the number of tables it touches); every
`merge_every_seconds` the buffer and the batch are applied together through the pipeline's usual batch
function and the buffer is emptied. Between two merges the tables lag by up to that interval, and
`io/current.py` reads a table with the buffer's changes laid over it. The buffer holds messages as
`transforms/parse.py` parses them, so applying it later is applying the same messages later: the
sequence guard makes the result the one of applying them batch by batch.
"""

from __future__ import annotations

import time
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.io.delta import Txn, exists, idempotent

BUFFER_DIR = "_lakefeed/change_buffer"


def buffer_location(target_path: str) -> str:
    return f"{target_path.rstrip('/')}/{BUFFER_DIR}"


def pending_messages(spark: Any, path: str) -> DataFrame | None:
    """The buffered messages, or None when the buffer holds none."""
    if not exists(spark, path):
        return None
    buffered: DataFrame = spark.read.format("delta").load(path)
    return None if buffered.isEmpty() else buffered


class ChangeBuffer:
    """The buffer of one pipeline, and when it is next due for its MERGE."""

    def __init__(self, path: str, merge_every_seconds: int, clock: Any = time.monotonic) -> None:
        self.path = path
        self.merge_every_seconds = merge_every_seconds
        self._clock = clock
        self._merged_at = clock()
        self.holds_changes = True  # unknown at start: an earlier run may have left changes

    def due(self) -> bool:
        return bool(self._clock() - self._merged_at >= self.merge_every_seconds)

    def append(self, spark: Any, messages: DataFrame, txn: Txn) -> None:
        """One Delta append of the batch's valid messages (a re-run batch's append is skipped by `txn`)."""
        with idempotent(spark, txn):
            messages.where(F.col("valid")).write.format("delta").mode("append").save(self.path)
        self.holds_changes = True

    def pending(self, spark: Any) -> DataFrame | None:
        found = pending_messages(spark, self.path) if self.holds_changes else None
        self.holds_changes = found is not None
        return found

    def merged(self, spark: Any) -> None:
        """Everything read from the buffer has been applied: empty it (one commit, no data rewritten) and
        start the next interval. A crash before this point applies the same changes again: they change
        nothing the second time. An empty buffer gets no commit."""
        if self.holds_changes and exists(spark, self.path):
            DeltaTable.forPath(spark, self.path).delete()
        self.holds_changes = False
        self._merged_at = self._clock()
