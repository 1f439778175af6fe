"""Where a micro-batch ends in each Kafka partition, and where each partition ends now: what the DDL hold
(jobs/ddl_hold.py) needs to know whether a partition still has unread records.

Both are read through the driver's JVM, with the classes Spark's Kafka source already loaded, so they take the
same client settings (`kafka.*`: TLS, SASL) and reach the same storage as the query itself:
- a batch's end offsets from the query's offset log, `<checkpoint>/offsets/<batch id>`, which Spark writes
  before it runs the batch (its "v1" header line, a metadata line, then one line per source: for the Kafka
  source `{"topic": {"partition": offset}}`, the offset the batch reads up to, exclusive);
- the partitions' latest offsets by Kafka's Admin `listOffsets` (KIP-396) at the source's isolation level (with
  `read_committed`, the last stable offset, as Spark's source itself reads).
"""

from __future__ import annotations

import json
from typing import Any

from spark_pipelines.config import SourceConfig
from spark_pipelines.errors import PipelineError

TopicPartition = tuple[str, int]
ADMIN_TIMEOUT_S = 60
# Consumer settings an Admin client does not take (it would log each as unknown).
_CONSUMER_ONLY = {"isolation.level", "group.id", "auto.offset.reset", "enable.auto.commit", "max.poll.records",
                  "fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "max.partition.fetch.bytes",
                  "key.deserializer", "value.deserializer", "session.timeout.ms", "heartbeat.interval.ms"}


def batch_end_offsets(spark: Any, checkpoint: str, batch_id: int) -> dict[TopicPartition, int]:
    """The offset batch `batch_id` reads each partition up to (exclusive), from the query's offset log."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(f"{checkpoint.rstrip('/')}/offsets/{batch_id}")
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = fs.open(path)
    try:
        text = str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()
    ends: dict[TopicPartition, int] = {}
    for line in text.splitlines()[2:]:  # after the version and the batch's metadata: one line per source
        offsets = json.loads(line)
        if not isinstance(offsets, dict):
            raise PipelineError(f"{path}: expected the Kafka source's offsets, got {line[:200]!r}")
        for topic, partitions in offsets.items():
            ends.update({(topic, int(partition)): int(offset) for partition, offset in partitions.items()})
    return ends


def latest_offsets(spark: Any, source: SourceConfig, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """Each partition's latest offset now (the last stable offset under `kafka.isolation.level:
    read_committed`)."""
    jvm = spark.sparkContext._jvm
    kafka = jvm.org.apache.kafka
    settings = dict(source.options)
    properties = jvm.java.util.Properties()
    properties.put("bootstrap.servers", source.bootstrap_servers)
    for key, value in settings.items():
        if key.startswith("kafka.") and key[len("kafka."):] not in _CONSUMER_ONLY | {"bootstrap.servers"}:
            properties.put(key[len("kafka."):], value)
    committed = settings.get("kafka.isolation.level", "read_uncommitted").lower() == "read_committed"
    levels = kafka.common.IsolationLevel
    isolation = levels.READ_COMMITTED if committed else levels.READ_UNCOMMITTED
    request = jvm.java.util.HashMap()
    for topic, partition in partitions:
        request.put(kafka.common.TopicPartition(topic, partition), kafka.clients.admin.OffsetSpec.latest())
    admin = kafka.clients.admin.Admin.create(properties)
    try:
        answer = admin.listOffsets(request, kafka.clients.admin.ListOffsetsOptions(isolation)).all().get(
            ADMIN_TIMEOUT_S, jvm.java.util.concurrent.TimeUnit.SECONDS)
        return {(topic, partition): int(answer.get(kafka.common.TopicPartition(topic, partition)).offset())
                for topic, partition in partitions}
    finally:
        admin.close()
