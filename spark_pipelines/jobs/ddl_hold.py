"""A schema change waits until every partition of its topic has been read past it (`source.max_offsets_per_trigger`).

The changefeed writes a DDL message to partition 0 only once every older row change of every partition has been
acknowledged (TiCDC does the same for canal-JSON), so a micro-batch that reads every partition to its end holds
every row older than a DDL it applies. Spark's `maxOffsetsPerTrigger` instead gives each partition a share of a
batch: a batch can then hold partition 0's `ALTER TABLE t DROP COLUMN c` and not yet the older rows of `t` in
another partition, which still carry `c`; applied a batch later they would bring the column back (found by the
equality harness, seed 2 with `LAKEFEED_EQ_MAX_OFFSETS=40`, docs/spark-pipelines.md).

So, when the source caps its batches, each batch first finds the oldest DDL that some partition of its topic has
not been read past, and holds that DDL and every message at or after its sequence back for a later batch. A
partition p has been read past a DDL at sequence S when this batch (or what is held) has a message of p newer
than S (a partition's messages come in commit order), when p is the DDL's own partition, or when p has no unread
record: the batch reads it up to its latest offset, and every row older than S was written before the DDL was.
Spark commits the batch's offsets, so what is held is kept in the query's checkpoint, as Parquet under
`<checkpoint>/lakefeed-held/<batch id>`; the next batch reads it before its own records. A batch re-run after a
crash reads the same held messages (those of the batch before it are deleted only two batches on) and holds the
same ones again. A query that stops (`trigger: available_now` included) with messages held applies them in its
next run, at the latest when the lagging partition is read past the DDL; a run started without the cap applies
them in its first batch (it reads every partition to its end).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.config import SourceConfig
from spark_pipelines.io.kafka_offsets import TopicPartition, batch_end_offsets, latest_offsets
from spark_pipelines.io.tables import seq_literal
from spark_pipelines.transforms.parse import SEQ

log = logging.getLogger(__name__)
HELD_DIR = "lakefeed-held"
Sequence = tuple[int, int, int]  # (ts, partition, offset), ordered as transforms/parse.py says


def lagging_partitions(ddl_topic: str, ddl_seq: Sequence, newest: Mapping[TopicPartition, Sequence],
                       ends: Mapping[TopicPartition, int]) -> list[TopicPartition]:
    """The partitions of the DDL's topic not yet known to be read past it by their messages: neither its own
    partition nor one with a newer message (`newest`: the newest sequence per partition in the batch and what
    is held). Whether these have unread records decides (`first_held`)."""
    return [(topic, partition) for topic, partition in sorted(ends)
            if topic == ddl_topic and partition != ddl_seq[1]
            and not ((seen := newest.get((topic, partition))) is not None and seen > ddl_seq)]


def first_held(ddls: Iterable[tuple[str, Sequence]], newest: Mapping[TopicPartition, Sequence],
               ends: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> tuple[str, Sequence] | None:
    """The oldest DDL (topic, sequence) that some partition of its topic has not been read past, or None.
    `ends`: where this batch stops reading each partition; `latest`: each partition's latest offset (for at
    least the lagging ones)."""
    for topic, seq in sorted(ddls, key=lambda ddl: ddl[1]):
        if any(ends[p] < latest[p] for p in lagging_partitions(topic, seq, newest, ends)):
            return topic, seq
    return None


class DdlHold:
    """The held messages of one query (module docstring)."""

    def __init__(self, source: SourceConfig, checkpoint: str) -> None:
        self.source = source
        self.root = f"{checkpoint.rstrip('/')}/{HELD_DIR}"
        self.checkpoint = checkpoint
        # The batch that this object saw hold nothing, so the one after it need not look. Unknown at start (an
        # earlier run, perhaps one with the cap, may have left some), and a batch run again after a failure
        # looks again. A source without the cap reads held messages, never holds.
        self._none_held_by: int | None = None

    def release(self, spark: Any, messages: DataFrame, batch_id: int) -> DataFrame:
        """The messages batch `batch_id` applies now: what the batch before it held, and this batch's own,
        less what is held for a later batch (written to the checkpoint before this returns)."""
        capped = bool(self.source.max_offsets_per_trigger)
        held = None
        if self._none_held_by != batch_id - 1:  # else it held nothing (an older set is deleted at the next read)
            held = self._read(spark, batch_id - 1, messages)
            self._delete_before(spark, batch_id - 1)  # batch `batch_id - 1` has committed: what it read is done
        combined = messages if held is None else held.unionByName(messages)
        stop = self._first_held(spark, combined, batch_id) if capped else None
        self._none_held_by = batch_id if stop is None else None
        if stop is None:
            return combined if held is None else combined.persist()
        topic, seq = stop
        later = F.col(SEQ) >= seq_literal({"ts": seq[0], "partition": seq[1], "offset": seq[2]})
        kept_back = combined.where(F.coalesce(later, F.lit(False)))
        kept_back.write.mode("overwrite").parquet(self._location(batch_id))
        log.info("batch %d: a schema change at %s[%d]@%d waits until every partition of %s has been read past it; "
                 "it and the later messages are held for a later batch (%s)",
                 batch_id, topic, seq[1], seq[2], topic, self._location(batch_id))
        return combined.where(~F.coalesce(later, F.lit(False))).persist()

    def _first_held(self, spark: Any, messages: DataFrame, batch_id: int) -> tuple[str, Sequence] | None:
        ddls = [(row["topic"], tuple(row[SEQ])) for row in
                messages.where(F.col("valid") & F.col("is_ddl")).select("topic", SEQ).collect()]
        if not ddls:
            return None
        newest = {(row["topic"], row["partition"]): tuple(row["newest"]) for row in
                  messages.where(F.col(SEQ).isNotNull()).groupBy("topic", "partition")
                  .agg(F.max(SEQ).alias("newest")).collect()}
        ends = batch_end_offsets(spark, self.checkpoint, batch_id)
        lagging = sorted({p for topic, seq in ddls for p in lagging_partitions(topic, seq, newest, ends)})
        if not lagging:
            return None
        return first_held(ddls, newest, ends, latest_offsets(spark, self.source, lagging))

    def _location(self, batch_id: int) -> str:
        return f"{self.root}/{batch_id}"

    def _read(self, spark: Any, batch_id: int, like: DataFrame) -> DataFrame | None:
        if batch_id < 0 or not self._filesystem(spark).exists(self._path(spark, self._location(batch_id))):
            return None
        held: DataFrame = spark.read.schema(like.schema).parquet(self._location(batch_id))
        return held

    def _delete_before(self, spark: Any, batch_id: int) -> None:
        fs = self._filesystem(spark)
        root = self._path(spark, self.root)
        if not fs.exists(root):
            return
        for status in fs.listStatus(root):
            name = status.getPath().getName()
            if name.isdigit() and int(name) < batch_id:
                fs.delete(status.getPath(), True)

    def _path(self, spark: Any, location: str) -> Any:
        return spark.sparkContext._jvm.org.apache.hadoop.fs.Path(location)

    def _filesystem(self, spark: Any) -> Any:
        return self._path(spark, self.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
