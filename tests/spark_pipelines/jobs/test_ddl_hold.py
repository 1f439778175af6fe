"""`source.max_offsets_per_trigger` on a topic of several partitions: a DDL waits until every partition has been
read past it (jobs/ddl_hold.py). Through Apache Kafka and real Spark; the decision itself on plain values."""

import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing import KafkaReference
from spark_pipelines.config import SourceConfig, parse_config
from spark_pipelines.io.delta import INTERNAL, live_rows
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import ApplyBatch, start_query
from spark_pipelines.jobs.ddl_hold import HELD_DIR, DdlHold, first_held, lagging_partitions
from spark_pipelines.transforms.parse import parse_messages
from tests.spark_pipelines.canal import ddl, dml, records

ES = 1_700_000_000_000
TSO = 18  # transforms/parse.py: es << 18 is a sequence's ts


def test_a_dropped_column_stays_dropped_when_older_rows_of_another_partition_come_later(
        kafka: KafkaReference, spark: Any, tmp_path: Path) -> None:
    # As the changefeed writes them: partition 1's 12 rows are older than the DDL and were in Kafka before it.
    topic = f"hold-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
    for i in range(12):
        producer.produce(topic, partition=1, value=dml(
            "acct", "INSERT", {"id": str(i), "owner": f"o{i}", "flag": "y"}, es=ES + i).encode())
    assert producer.flush(30) == 0
    producer.produce(topic, partition=0, value=ddl("acct", "ALTER", "ALTER TABLE acct DROP COLUMN flag",
                                                   es=ES + 100).encode())
    for i in range(100, 105):
        producer.produce(topic, partition=0, value=dml("acct", "INSERT", {"id": str(i), "owner": f"o{i}"},
                                                       es=ES + i + 1).encode())
    assert producer.flush(30) == 0

    # 4 records a batch, shared by the partitions in proportion to their backlog: the first batch reads the DDL
    # (partition 0's first record) before most of partition 1's older rows.
    config = parse_config({
        "source": {"bootstrap_servers": kafka.bootstrap_servers, "topics": [topic], "max_offsets_per_trigger": 4},
        "target": {"path": str(tmp_path / "delta")},
        "checkpoint": str(tmp_path / "checkpoint"),
        "trigger": {"available_now": True},
    })
    batch = ApplyBatch(config)
    query = start_query(spark, read_stream(spark, config.source), config, batch=batch)
    query.awaitTermination(300)
    assert not query.isActive and query.exception() is None, query.exception()
    assert query.lastProgress["batchId"] >= 3  # the cap cut the topic into many batches

    table = live_rows(spark, config.table_path("shop", "acct"))
    assert [c for c in table.columns if c not in INTERNAL] == ["id", "owner"]  # as MySQL's table after the DROP
    assert sorted(tuple(row) for row in table.select("id", "owner").collect()) == sorted(
        [(i, f"o{i}") for i in range(12)] + [(i, f"o{i}") for i in range(100, 105)])
    # The last batch held nothing back.
    assert not (tmp_path / "checkpoint" / HELD_DIR / str(query.lastProgress["batchId"])).exists()


def _seq(es: int, partition: int, offset: int) -> tuple[int, int, int]:
    return (es << TSO, partition, offset)


def test_a_partition_with_a_newer_message_or_no_unread_record_has_passed_the_ddl() -> None:
    drop = ("cdc", _seq(ES + 100, 0, 7))
    ends = {("cdc", 0): 8, ("cdc", 1): 40, ("cdc", 2): 12, ("other", 0): 3}
    newest = {("cdc", 0): _seq(ES + 100, 0, 7), ("cdc", 1): _seq(ES + 101, 1, 39), ("cdc", 2): _seq(ES + 50, 2, 11)}
    # Partition 0 is the DDL's own, partition 1 has a newer message; partition 2 and nothing of another topic.
    assert lagging_partitions(*drop, newest, ends) == [("cdc", 2)]
    assert first_held([drop], newest, ends, {("cdc", 2): 20}) == drop  # partition 2 has unread records
    assert first_held([drop], newest, ends, {("cdc", 2): 12}) is None  # read to its end: nothing older is left
    # A partition the batch has no message of at all is lagging too, unless it is at its end.
    assert lagging_partitions(*drop, {}, ends) == [("cdc", 1), ("cdc", 2)]
    assert first_held([drop], {}, ends, {("cdc", 1): 40, ("cdc", 2): 12}) is None
    # The oldest DDL not passed is the one held, with everything after it; an older passed one applies.
    older = ("cdc", _seq(ES + 40, 0, 5))
    assert first_held([drop, older], newest, ends, {("cdc", 2): 20}) == drop
    assert first_held([drop, older], {**newest, ("cdc", 2): _seq(ES + 30, 2, 11)}, ends, {("cdc", 2): 20}) == older
    # Equal timestamps order by partition, as every sequence does: partition 2's message at the DDL's ts is after it.
    assert lagging_partitions(*drop, {**newest, ("cdc", 2): _seq(ES + 100, 2, 0)}, ends) == []


def test_a_run_without_the_cap_applies_what_a_capped_run_held(spark: Any, tmp_path: Path) -> None:
    # A capped run stopped with the DDL and a later row held (in the checkpoint, as batch 4 left them).
    held = parse_messages(records(spark, [
        ddl("acct", "ALTER", "ALTER TABLE acct DROP COLUMN flag", es=ES + 100),
        dml("acct", "INSERT", {"id": "100", "owner": "later"}, es=ES + 101)]))
    held.write.parquet(str(tmp_path / "checkpoint" / HELD_DIR / "4"))
    # Restarted without the cap: batch 5 reads every partition to its end, so whatever was held applies now.
    hold = DdlHold(SourceConfig("127.0.0.1:9", ("cdc",)), str(tmp_path / "checkpoint"))
    own = parse_messages(records(spark, [dml("acct", "INSERT", {"id": "1", "owner": "old"}, es=ES + 1)],
                                 partition=1))
    applied = hold.release(spark, own, 5)
    assert sorted((row["type"], row["offset"], row["partition"]) for row in applied.collect()) == [
        ("ALTER", 0, 0), ("INSERT", 0, 1), ("INSERT", 1, 0)]
    # Batch 5 run again by a new job (the first one crashed before Spark committed it): the same messages.
    again = DdlHold(SourceConfig("127.0.0.1:9", ("cdc",)), str(tmp_path / "checkpoint"))
    assert again.release(spark, own, 5).count() == 3
    # Nothing was held by batch 5: batch 6 gets its own messages only, without reading the checkpoint again,
    # and so does a second attempt at batch 6 by the same job (the first one failed).
    assert hold.release(spark, own, 6) is own
    assert hold.release(spark, own, 6) is own
