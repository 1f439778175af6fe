"""DescribeLogDirs on the 3-node cluster through `kafka-log-dirs`: each broker lists the replicas it holds
(all three, RF 3) with their size on its own disk, equal on every replica once they are in sync, and offset lag
0 (Kafka: max(high watermark - log end offset, 0)). Holds for Apache Kafka (`LAKEFEED_CLUSTER_TESTS=kafka`)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer

from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until
from tests.broker.test_server_log_dirs import log_dirs, segment_bytes


def test_kafka_log_dirs_describes_every_replica(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(60):
        producer.produce(topic, value=b"y" * 100 + str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    names = [f"{topic}-{p}" for p in range(3)]
    brokers = ",".join(str(n) for n in cluster.node_ids)

    def in_sync() -> dict[int, dict[str, Any]] | None:
        answer = log_dirs(cluster.bootstrap, topic, "--broker-list", brokers)
        sizes = {name: {answer[n]["partitions"][name]["size"] for n in cluster.node_ids
                        if name in answer[n]["partitions"]} for name in names}  # fmt: skip
        return answer if all(len(s) == 1 and s.pop() > 20 * 100 for s in sizes.values()) else None

    answer: dict[int, dict[str, Any]] = until(in_sync, 60, "replicas of equal size", interval=1)  # type: ignore[assignment]
    assert sorted(answer) == cluster.node_ids
    for node in cluster.node_ids:
        parts = answer[node]["partitions"]
        assert sorted(parts) == names, (node, parts)
        for name, part in parts.items():
            assert part["offsetLag"] == 0 and part["isFuture"] is False, (node, part)
            assert part["size"] == segment_bytes(cluster.data_dir(node) / name), (node, name)
