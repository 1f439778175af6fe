"""Apache Kafka's own Java clients (the CLI tools from the Kafka 4.3 jars) against our broker over TCP."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from confluent_kafka import Consumer

from broker.coordinator.offsets_topic import partition_for
from lakefeed_testing.kafka_reference import run_kafka_tool
from tests.broker.conftest import BrokerProcess


def _tool(broker: BrokerProcess, name: str, *args: str, stdin: str | None = None) -> str:
    result = run_kafka_tool(name, "--bootstrap-server", broker.bootstrap, *args, input_text=stdin, timeout=90)
    assert result.returncode == 0, f"{name} {' '.join(args)} failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def _rows(output: str, first: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.split()[:1] == [first]]


def test_kafka_topics_and_kafka_configs(broker: BrokerProcess, topic_name: str) -> None:
    _tool(broker, "kafka-topics", "--create", "--topic", topic_name, "--partitions", "3", "--replication-factor", "1",
          "--config", "retention.ms=3600000")
    described = _tool(broker, "kafka-topics", "--describe", "--topic", topic_name)
    assert re.search(rf"Topic: {topic_name}\s+TopicId: \S+\s+PartitionCount: 3\s+ReplicationFactor: 1", described)
    assert "retention.ms=3600000" in described
    partitions = [line for line in described.splitlines() if "Partition: " in line and "Leader: 1" in line]
    assert len(partitions) == 3 and all("Isr: 1" in line for line in partitions)
    _tool(broker, "kafka-topics", "--alter", "--topic", topic_name, "--partitions", "5")
    assert "PartitionCount: 5" in _tool(broker, "kafka-topics", "--describe", "--topic", topic_name)
    _tool(broker, "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic_name,
          "--add-config", "cleanup.policy=compact,segment.ms=600000", "--delete-config", "retention.ms")
    dynamic = _tool(broker, "kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic_name)
    assert "cleanup.policy=compact" in dynamic and "segment.ms=600000" in dynamic
    assert "retention.ms" not in dynamic
    everything = _tool(broker, "kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", topic_name,
                       "--all")
    assert "retention.ms=604800000" in everything and "DEFAULT_CONFIG:log.retention.ms=604800000" in everything


def test_console_producer_consumer_groups_and_offsets(broker: BrokerProcess, topic_name: str) -> None:
    _tool(broker, "kafka-topics", "--create", "--topic", topic_name, "--partitions", "2")
    lines = [f"k{i}:v{i}" for i in range(20)]
    _tool(broker, "kafka-console-producer", "--topic", topic_name, "--reader-property", "parse.key=true",
          "--reader-property", "key.separator=:", stdin="\n".join(lines) + "\n")
    group = f"g-{topic_name}"
    consumed = _tool(broker, "kafka-console-consumer", "--topic", topic_name, "--group", group, "--from-beginning",
                     "--max-messages", "20", "--timeout-ms", "30000", "--formatter-property", "print.key=true")
    assert sorted(line.replace("\t", ":") for line in consumed.splitlines() if line) == sorted(lines)
    ends = {int(r[1]): int(r[2]) for r in (line.split(":") for line in
            _tool(broker, "kafka-get-offsets", "--topic", topic_name).split()) if r[0] == topic_name}  # fmt: skip
    assert sum(ends.values()) == 20 and set(ends) == {0, 1}
    rows = _rows(_tool(broker, "kafka-consumer-groups", "--describe", "--group", group), group)
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...: everything consumed was committed.
    assert {(int(r[2]), int(r[3]), int(r[4]), r[5]) for r in rows} == {(p, end, end, "0") for p, end in ends.items()}
    # Kafka's own formatter reads our __consumer_offsets records: same key and value layouts.
    partition = partition_for(group, 50)
    records = _tool(broker, "kafka-console-consumer", "--topic", "__consumer_offsets", "--partition", str(partition),
                    "--offset", "earliest", "--timeout-ms", "3000", "--formatter",
                    "org.apache.kafka.tools.consumer.OffsetsMessageFormatter")
    stored = [r for r in _json_objects(records) if r["key"]["data"].get("group") == group]
    assert {(r["key"]["data"]["partition"], r["value"]["data"]["offset"]) for r in stored} >= set(ends.items())
    _tool(broker, "kafka-delete-records", "--offset-json-file", _offsets_file(broker, topic_name, ends[0]))
    earliest = _tool(broker, "kafka-get-offsets", "--topic", topic_name, "--time", "-2", "--partitions", "0")
    assert earliest.strip() == f"{topic_name}:0:{ends[0]}"


def _json_objects(text: str) -> list[Any]:
    """The formatter writes one JSON object per record without a separator."""
    decoder, objects, position = json.JSONDecoder(), [], 0
    text = text.strip()
    while position < len(text):
        value, position = decoder.raw_decode(text, position)
        objects.append(value)
        while position < len(text) and text[position].isspace():
            position += 1
    return objects


def _offsets_file(broker: BrokerProcess, topic: str, offset: int) -> str:
    path = broker.data_dir.parent / f"delete-{uuid.uuid4().hex}.json"
    path.write_text(f'{{"partitions": [{{"topic": "{topic}", "partition": 0, "offset": {offset}}}], "version": 1}}')
    return str(path)


def test_consumer_groups_describes_active_members(broker: BrokerProcess, topic_name: str) -> None:
    _tool(broker, "kafka-topics", "--create", "--topic", topic_name, "--partitions", "4")
    group = f"g-{topic_name}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "member-one",
                         "session.timeout.ms": 30000})
    consumer.subscribe([topic_name])
    try:
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == 4
        members = _rows(_tool(broker, "kafka-consumer-groups", "--describe", "--group", group, "--members"), group)
        # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
        assert [(r[3], r[4]) for r in members] == [("member-one", "4")]
        state = _tool(broker, "kafka-consumer-groups", "--describe", "--group", group, "--state")
        assert re.search(rf"{group}\s+\S+:\d+\s+\(1\)\s+range\s+Stable\s+1", state), state
    finally:
        consumer.close()
