"""The broker's Prometheus endpoint (metrics.port), read from a real `broker start` process after real
confluent-kafka clients produced, consumed and committed: the JMX-exporter names operators know
(docs/broker.md#metrics) with values that follow what the clients did."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.prometheus import scrape

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class MetricsBroker:
    bootstrap: str
    metrics_url: str
    log_path: Path


@pytest.fixture(scope="module")
def metrics_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsBroker]:
    root = tmp_path_factory.mktemp("metrics-broker")
    port, metrics_port = free_port(), free_port()
    log_path = root / "broker.log"
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(root / "data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{port}", "--metrics-port", str(metrics_port),
               "--log-format", "text", "--set", "group.initial.rebalance.delay.ms=0"]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port) and port_open(metrics_port), timeout=20, what="broker",
                   alive=lambda: process.poll() is None)
        yield MetricsBroker(f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics", log_path)
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_metrics_follow_produce_fetch_and_commits(metrics_broker: MetricsBroker) -> None:
    topic, group = f"m-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": metrics_broker.bootstrap})
    for i in range(10):
        producer.produce(topic, key=str(i).encode(), value=b"x" * 100, partition=0)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": metrics_broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen = []
        for _ in range(30):
            seen += [m for m in consumer.consume(10, timeout=0.5) if m.error() is None]
            if len(seen) >= 4:
                break
        consumer.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    finally:
        consumer.close()

    metrics = scrape(metrics_broker.metrics_url)
    end = metrics.value("kafka_log_log_logendoffset", topic=topic, partition="0")
    assert end == 10
    assert metrics.value("kafka_log_log_logstartoffset", topic=topic, partition="0") == 0
    assert (metrics.value("kafka_log_log_size", topic=topic, partition="0") or 0) > 1000  # 10 x 100 B + framing
    # kafka_exporter's lag: high watermark minus the committed offset
    assert metrics.value("kafka_consumergroup_lag", group=group, topic=topic, partition="0") == 6
    assert (metrics.value("kafka_server_brokertopicmetrics_bytesin_total", topic=topic) or 0) > 1000
    assert (metrics.value("kafka_server_brokertopicmetrics_bytesout_total", topic=topic) or 0) > 400
    assert (metrics.value("kafka_network_requestmetrics_requests_total", request="Produce") or 0) >= 1
    assert (metrics.value("kafka_network_requestmetrics_requests_total", request="FetchConsumer") or 0) >= 1
    assert (metrics.value("kafka_network_requestmetrics_totaltime_seconds_count", request="Metadata") or 0) >= 1
    # a single node is its own controller, leads everything, and nothing is under-replicated or offline
    assert metrics.value("kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert metrics.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert metrics.value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert metrics.value("kafka_server_replicamanager_isrshrinks_total") == 0


def test_text_log_format_has_iso_timestamps(metrics_broker: MetricsBroker) -> None:
    first = metrics_broker.log_path.read_text().splitlines()[0]
    # e.g. 2026-11-24T00:35:49.123Z INFO broker.metrics: metrics endpoint listening host=127.0.0.1 port=...
    stamp, level, logger = first.split(" ")[:3]
    assert len(stamp) == 24 and stamp[10] == "T" and stamp.endswith("Z"), first
    assert level in {"INFO", "WARNING"} and logger.endswith(":"), first


def test_unknown_path_is_404(metrics_broker: MetricsBroker) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(metrics_broker.metrics_url.replace("/metrics", "/"), timeout=5)
    assert caught.value.code == 404


def test_isr_changes_are_counted_once_per_applied_change() -> None:
    from broker.cluster.replicas import ReplicaManager
    from broker.metrics import BrokerMetrics

    class _NoState:
        cluster = None

    metrics = BrokerMetrics(_NoState())  # type: ignore[arg-type]
    replicas = ReplicaManager(1, isr_listener=metrics.on_isr_change)
    replicas.become_leader(("t", 0), 1, (1, 2, 3), (1, 2, 3), 0, 2, 30_000, 0)
    replicas.become_leader(("t", 0), 1, (1, 2, 3), (1, 2), 0, 2, 30_000, 1)  # the controller shrank the ISR
    replicas.become_leader(("t", 0), 1, (1, 2, 3), (1, 2), 0, 2, 30_000, 1)  # same ISR again: no change
    replicas.become_leader(("t", 0), 1, (1, 2, 3), (1, 2, 3), 0, 2, 30_000, 2)  # and expanded it
    assert metrics.isr_shrinks._value.get() == 1
    assert metrics.isr_expands._value.get() == 1
