"""Metadata log snapshots on real processes: with a low `metadata.log.max.record.bytes.between.snapshots`,
a voter and a broker-only node stopped while many metadata records were written (and a topic they hold was
deleted) come back from the snapshot: the voter through the leader's InstallSnapshot, the broker-only node by
reading the snapshot from a voter; both serve the current metadata and drop the deleted topic's logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as Tp
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from lakefeed_testing.own_cluster import own_cluster, wait_cluster_formed
from tests.broker.cluster.clients import create_topic, describe
from tests.broker.cluster.harness import SETTINGS, until

pytestmark = pytest.mark.integration


def _read_all(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "snapshots", "enable.auto.commit": False})
    try:
        consumer.assign([Tp(topic, 0, 0)])
        got: list[bytes] = []
        for _ in range(50):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            elif got and msg is None:
                break
        return got
    finally:
        consumer.close()


def test_stopped_nodes_come_back_from_the_metadata_snapshot(tmp_path: Path) -> None:
    settings = {**SETTINGS, "metadata.log.max.record.bytes.between.snapshots": "2000"}
    with own_cluster(tmp_path / "c", 4, settings) as dev:  # nodes 1-3 vote, node 4 is a broker only
        boot = dev.bootstrap_servers()
        active = until(dev.active_controller, 30, "an active controller")
        voter = max(n for n in (1, 2, 3) if n != active)  # the voter to stop
        others = [n for n in (1, 2, 3) if n != voter]
        create_topic(boot, "kept", assignment=[[4, voter, others[0]]])
        create_topic(boot, "doomed", assignment=[[voter, 4, others[1]]])
        producer = Producer({"bootstrap.servers": boot, "acks": "all"})
        for i in range(5):
            producer.produce("kept", str(i).encode(), partition=0)
        assert producer.flush(30) == 0
        behind = (dev.controller_status(voter) or {})["last_index"]
        dev.kill(voter)
        dev.kill(4)
        live = ",".join(f"127.0.0.1:{dev.port(n)}" for n in others)
        admin = AdminClient({"bootstrap.servers": live})
        admin.delete_topics(["doomed"])["doomed"].result(30)
        for i in range(60):  # about 100 bytes of records each: several snapshots
            res = ConfigResource("topic", "kept", incremental_configs=[
                ConfigEntry("retention.ms", str(100_000 + i), incremental_operation=AlterConfigOpType.SET)])
            admin.incremental_alter_configs([res])[res].result(30)
        active = until(dev.active_controller, 30, "an active controller")
        until(lambda: (dev.controller_status(active) or {}).get("snapshot_index", 0) > behind + 40, 30,
              "the active controller compacted past what the stopped voter holds")

        dev.restart(voter)
        dev.restart(4)
        wait_cluster_formed(dev, timeout=60)
        for n in (voter, 4):
            only = f"127.0.0.1:{dev.port(n)}"
            node_admin = AdminClient({"bootstrap.servers": only})
            topics = node_admin.list_topics(timeout=10).topics
            assert "doomed" not in topics and "kept" in topics
            assert sorted(describe(only, "kept")[0].replicas) == sorted([4, voter, others[0]])
            res = ConfigResource("topic", "kept")
            configs = node_admin.describe_configs([res])[res].result(30)
            assert configs["retention.ms"].value == "100059"
            # The deleted topic's log, left on the stopped node's disk, is gone too.
            assert not [p for p in (dev.data_dir / f"node-{n}").rglob("doomed-*") if p.is_dir()], n
        status = dev.controller_status(voter)
        assert status is not None and status["snapshot_index"] > behind + 40
        assert "loaded the metadata snapshot" in dev.log_path(4).read_text()
        assert until(lambda: _read_all(f"127.0.0.1:{dev.port(4)}", "kept") == [str(i).encode() for i in range(5)],
                     30, "node 4 serves what was written before it stopped")
