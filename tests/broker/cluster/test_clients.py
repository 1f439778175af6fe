"""Issue 5, must show: Apache Kafka's Java clients (the CLI tools), kcat and Spark's Kafka source work against
the 3-node cluster: they see three brokers, RF 3 partitions with full ISRs, and read what was written."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from lakefeed_testing.kafka_reference import run_kafka_tool
from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster


def _tool(cluster: Cluster, name: str, *args: str, stdin: str | None = None) -> str:
    result = run_kafka_tool(name, "--bootstrap-server", cluster.bootstrap, *args, input_text=stdin, timeout=90)
    assert result.returncode == 0, f"{name} {' '.join(args)} failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def _kcat(cluster: Cluster, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kcat", "-b", cluster.bootstrap, *args], input=stdin, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_java_tools_create_describe_produce_and_consume(cluster: Cluster) -> None:
    topic = new_topic_name()
    _tool(cluster, "kafka-topics", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "3")
    described = _tool(cluster, "kafka-topics", "--describe", "--topic", topic)
    assert re.search(rf"Topic: {topic}\s+TopicId: \S+\s+PartitionCount: 3\s+ReplicationFactor: 3", described)
    rows = re.findall(r"Partition: (\d+)\s+Leader: (\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]+)", described)
    assert sorted(int(p) for p, *_ in rows) == [0, 1, 2]
    for _, leader, replicas, isr in rows:
        assert sorted(map(int, replicas.split(","))) == cluster.node_ids
        assert sorted(map(int, isr.split(","))) == cluster.node_ids and leader in replicas.split(",")
    assert len({leader for _, leader, _, _ in rows}) == 3  # leadership spread over the three nodes
    lines = [f"k{i}:v{i}" for i in range(30)]
    _tool(cluster, "kafka-console-producer", "--topic", topic, "--command-property", "acks=all",
          "--reader-property", "parse.key=true", "--reader-property", "key.separator=:", stdin="\n".join(lines) + "\n")
    consumed = _tool(cluster, "kafka-console-consumer", "--topic", topic, "--group", f"g-{topic}", "--from-beginning",
                     "--max-messages", "30", "--timeout-ms", "30000", "--formatter-property", "print.key=true")
    assert sorted(line.replace("\t", ":") for line in consumed.splitlines() if line) == sorted(lines)


def test_kcat_lists_the_cluster_produces_and_consumes(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=2)
    listing = _kcat(cluster, "-L", "-t", topic)
    assert f"{len(cluster.node_ids)} brokers:" in listing
    for node, port in cluster.ports.items():
        assert f"broker {node} at 127.0.0.1:{port}" in listing
    partitions = re.findall(r"partition (\d+), leader (\d+), replicas: ([\d,]+), isrs: ([\d,]+)", listing)
    assert len(partitions) == 2 and all(sorted(map(int, isrs.split(","))) == [1, 2, 3] for *_, isrs in partitions)
    lines = [f"line-{i}" for i in range(40)]
    _kcat(cluster, "-P", "-t", topic, "-p", "1", "-X", "acks=all", stdin="\n".join(lines) + "\n")
    consumed = _kcat(cluster, "-C", "-t", topic, "-p", "1", "-o", "beginning", "-e", "-f", "%o %s\\n")
    assert consumed.splitlines() == [f"{i} line-{i}" for i in range(40)]


def test_spark_kafka_source_reads_the_cluster(cluster: Cluster, spark: Any) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3)
    lines = [f"k{i}:v{i}" for i in range(30)]
    _kcat(cluster, "-P", "-t", topic, "-K", ":", "-X", "acks=all", stdin="\n".join(lines) + "\n")
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition")
    )
    rows = frame.collect()
    assert sorted(f"{r.key}:{r.value}" for r in rows) == sorted(lines)
    assert len({r.partition for r in rows}) > 1  # read from several partitions, i.e. several leaders


def test_kafka_leader_election_moves_leadership_back_to_the_preferred_replica(cluster: Cluster) -> None:
    from tests.broker.cluster.clients import describe, wait_full_isr
    from tests.broker.cluster.harness import until

    topic = new_topic_name()
    a, b, c = cluster.node_ids
    create_topic(cluster.bootstrap, topic, assignment=[[a, b, c]])
    not_needed = _tool(cluster, "kafka-leader-election", "--election-type", "PREFERRED", "--topic", topic,
                       "--partition", "0")
    assert "Valid replica already elected" in not_needed or "not needed" in not_needed.lower(), not_needed
    cluster.kill(a)
    live = cluster.bootstrap_of([b, c])
    until(lambda: describe(live, topic)[0].leader in (b, c), 30, "a new leader after the preferred one died")
    cluster.restart(a)
    wait_full_isr(cluster.bootstrap, topic)
    assert describe(cluster.bootstrap, topic)[0].leader != a  # it came back as a follower
    elected = _tool(cluster, "kafka-leader-election", "--election-type", "PREFERRED", "--topic", topic,
                    "--partition", "0")
    assert f"{topic}-0" in elected, elected
    until(lambda: describe(cluster.bootstrap, topic)[0].leader == a, 30, "the preferred replica leading again")
