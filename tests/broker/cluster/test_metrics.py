"""The broker's cluster metrics on a real 3-node `broker dev-cluster` (docs/broker.md#metrics): one active
controller over the cluster, a paused follower shows on its leader as an under-replicated partition and an
ISR shrink, and its return as an ISR expansion - what Kafka's ReplicaManager/KafkaController MBeans report."""

from __future__ import annotations

import time

import pytest

from lakefeed_testing.prometheus import scrape
from tests.broker.cluster.clients import Writer, create_topic, describe, new_topic_name
from tests.broker.cluster.harness import Cluster, until


def _value(cluster: Cluster, node: int, name: str) -> float:
    url = cluster.metrics_url(node)
    assert url is not None
    return scrape(url).value(name) or 0.0


def test_controller_isr_and_under_replicated_metrics_follow_a_paused_follower(cluster: Cluster) -> None:
    if cluster.metrics_url(1) is None:
        pytest.skip("the Apache Kafka reference exports JMX, not these Prometheus endpoints")
    assert sum(_value(cluster, n, "kafka_controller_kafkacontroller_activecontrollercount")
               for n in cluster.node_ids) == 1
    topic = new_topic_name()
    state = create_topic(cluster.bootstrap, topic, partitions=1)[0]
    controller = cluster.active_controller()
    follower = next(n for n in state.replicas if n not in (state.leader, controller))
    live = cluster.bootstrap_of([n for n in cluster.node_ids if n != follower])
    shrinks = _value(cluster, state.leader, "kafka_server_replicamanager_isrshrinks_total")
    expands = _value(cluster, state.leader, "kafka_server_replicamanager_isrexpands_total")
    writer = Writer(cluster.bootstrap, topic, interval=0.01).start()  # a follower lags only behind new writes
    try:
        until(lambda: len(writer.acked) >= 20, 30, "first acknowledgements")
        cluster.pause(follower)
        try:
            until(lambda: follower not in describe(live, topic)[0].isr, 30, f"node {follower} out of the ISR")
            until(lambda: _value(cluster, state.leader, "kafka_server_replicamanager_underreplicatedpartitions") >= 1,
                  10, "the leader to report an under-replicated partition")
            assert _value(cluster, state.leader, "kafka_server_replicamanager_isrshrinks_total") >= shrinks + 1
            assert _value(cluster, controller or state.leader,
                          "kafka_controller_kafkacontroller_offlinepartitionscount") == 0  # it still has a leader
        finally:
            cluster.resume(follower)
        until(lambda: follower in describe(cluster.bootstrap, topic)[0].isr, 30, f"node {follower} back in the ISR")
        deadline = time.monotonic() + 10
        while _value(cluster, state.leader, "kafka_server_replicamanager_isrexpands_total") < expands + 1:
            assert time.monotonic() < deadline, "no ISR expansion counted"
            time.sleep(0.2)
    finally:
        writer.stop()
