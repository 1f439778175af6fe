"""Cluster benchmark: our 3-node dev cluster vs a 3-node Apache Kafka (KRaft) cluster, side by side in one run.

    .venv/bin/python bench/cluster.py [--records 40000] [--size 1024] [--partitions 6] [--latency-seconds 3]
                                      [--rate 300] [--kafka-only]

Both clusters run on this machine, one after the other (never at the same time), each with RF 3 and
min.insync.replicas 2, and the same broker session timeout (`--session-timeout-ms`, Kafka's default 9 s).
- throughput: an idempotent confluent-kafka Producer (acks=all, linger.ms=5) sends N records over
  `--partitions` partitions until every one is acknowledged: records/s and MB/s;
- latency: linger.ms=0, `--rate` records/s for `--latency-seconds`; librdkafka's `Message.latency()`: p50, p99;
- failover: a producer writes to one partition every 5 ms; at t0 its leader is killed with SIGKILL (first a
  node that is not the active controller, then the active controller, on a partition it leads); the time
  is t0 -> the acknowledgement of the first record produced after t0. The node is restarted after each.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _produce_timing import timed_produce

from lakefeed_testing.kafka_reference import kafka_cluster_reference
from lakefeed_testing.own_cluster import own_cluster, wait_cluster_formed

PRODUCER = {"acks": "all", "enable.idempotence": True, "message.timeout.ms": 60_000}


@dataclass(frozen=True)
class Target:
    """What the benchmark needs of a cluster, whichever it is."""

    bootstrap: str
    kill: Callable[[int], None]
    restart: Callable[[int], None]
    controller: Callable[[], int | None]
    wait_all: Callable[[], None]


@dataclass(frozen=True)
class Result:
    rate: float
    mb: float
    p50_ms: float
    p99_ms: float
    leader_failover_s: float
    controller_failover_s: float


def _topic(bootstrap: str, partitions: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    return name


def _throughput(bootstrap: str, topic: str, payload: bytes, count: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER, "linger.ms": 5, "batch.size": 160_000,
                         "queue.buffering.max.messages": 1_000_000})
    return timed_produce(producer, bootstrap, topic, payload, count)


def _latency(bootstrap: str, topic: str, payload: bytes, seconds: float, rate: int) -> list[float]:
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER, "linger.ms": 0})
    latencies: list[float] = []

    def report(error: Any, message: Any) -> None:
        if error is None:
            latencies.append(message.latency() * 1000)

    producer.produce(topic, payload)  # connect and fetch metadata outside the measurement
    producer.flush(30)
    started = time.perf_counter()
    for index in range(int(seconds * rate)):
        delay = started + index / rate - time.perf_counter()
        if delay > 0:
            producer.poll(delay)
        producer.produce(topic, payload, on_delivery=report)
        producer.poll(0)
    producer.flush(30)
    return sorted(latencies)


def _leader(bootstrap: str, topic: str, partition: int) -> int:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return int(md.topics[topic].partitions[partition].leader)


def _failover(target: Target, victim: Callable[[str], tuple[int, int]], timeout: float = 90) -> float:
    """Kill the node `victim` names (node, partition it leads) under a producer writing to that partition;
    seconds from the kill to the acknowledgement of the first record produced after it."""
    topic = _topic(target.bootstrap, 3)
    node, partition = victim(topic)
    producer = Producer({"bootstrap.servers": target.bootstrap, **PRODUCER, "linger.ms": 0,
                         "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500})
    killed_at: list[float] = []
    recovered = threading.Event()
    recovered_at: list[float] = []

    def report(sent_at: float, error: Any, _message: Any) -> None:
        if error is None and killed_at and sent_at >= killed_at[0] and not recovered.is_set():
            recovered_at.append(time.monotonic())
            recovered.set()

    def send() -> None:
        sent_at = time.monotonic()
        producer.produce(topic, b"x" * 100, partition=partition, on_delivery=lambda e, m: report(sent_at, e, m))
        producer.poll(0.005)

    warm_until = time.monotonic() + 1
    while time.monotonic() < warm_until:
        send()
    if producer.flush(30):
        raise click.ClickException(f"{target.bootstrap}: records to {topic}[{partition}] unacknowledged before kill")
    killed_at.append(time.monotonic())
    target.kill(node)
    while not recovered.is_set() and time.monotonic() < killed_at[0] + timeout:
        send()
    producer.flush(60)
    target.restart(node)
    target.wait_all()
    if not recovered_at:
        raise click.ClickException(f"{target.bootstrap}: no produce to {topic}[{partition}] within {timeout:.0f} s")
    return recovered_at[0] - killed_at[0]


def _not_controller(target: Target) -> Callable[[str], tuple[int, int]]:
    def pick(topic: str) -> tuple[int, int]:
        controller = target.controller()
        leaders = [(_leader(target.bootstrap, topic, p), p) for p in range(3)]
        return next(((n, p) for n, p in leaders if n != controller), leaders[0])

    return pick


def _controller(target: Target) -> Callable[[str], tuple[int, int]]:
    def pick(topic: str) -> tuple[int, int]:
        controller = target.controller()
        leaders = [(_leader(target.bootstrap, topic, p), p) for p in range(3)]
        found = next(((n, p) for n, p in leaders if n == controller), None)
        if found is None:
            raise click.ClickException(f"no partition of {topic} is led by the active controller {controller}")
        return found

    return pick


def _measure(target: Target, size: int, count: int, partitions: int, seconds: float, rate: int) -> Result:
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    _throughput(target.bootstrap, _topic(target.bootstrap, partitions), payload, min(count, 5_000))  # warm-up
    elapsed = _throughput(target.bootstrap, _topic(target.bootstrap, partitions), payload, count)
    latencies = _latency(target.bootstrap, _topic(target.bootstrap, partitions), payload, seconds, rate)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    leader = _failover(target, _not_controller(target))
    controller = _failover(target, _controller(target))
    return Result(count / elapsed, size * count / 1e6 / elapsed, statistics.median(latencies), p99, leader, controller)


@contextmanager
def _ours(root: Path, session_ms: int) -> Iterator[Target]:
    settings = {"broker.session.timeout.ms": str(session_ms)}
    with own_cluster(root, 3, settings) as cluster:

        def controller() -> int | None:
            deadline = time.monotonic() + 30
            while (found := cluster.active_controller()) is None and time.monotonic() < deadline:
                time.sleep(0.1)
            return found

        yield Target(cluster.bootstrap_servers(), cluster.kill, cluster.restart, controller,
                     lambda: wait_cluster_formed(cluster, timeout=60))


@contextmanager
def _kafka(session_ms: int) -> Iterator[Target]:
    with kafka_cluster_reference(3, {"broker.session.timeout.ms": str(session_ms)}) as cluster:
        yield Target(cluster.bootstrap_servers, cluster.kill, cluster.restart, cluster.active_controller,
                     lambda: cluster.wait_brokers(3))


def _table(ours: Result | None, kafka: Result) -> str:
    metrics: list[tuple[str, Callable[[Result], float], str]] = [
        ("produce records/s (acks=all, idempotent)", lambda r: r.rate, "{:,.0f}"),
        ("produce MB/s", lambda r: r.mb, "{:.1f}"),
        ("produce latency p50 ms", lambda r: r.p50_ms, "{:.2f}"),
        ("produce latency p99 ms", lambda r: r.p99_ms, "{:.2f}"),
        ("failover s: partition leader killed", lambda r: r.leader_failover_s, "{:.2f}"),
        ("failover s: active controller killed", lambda r: r.controller_failover_s, "{:.2f}"),
    ]
    lines = ["| metric | ours (3 nodes) | Kafka (3 nodes) | ours/Kafka |", "|---|---:|---:|---:|"]
    for name, get, fmt in metrics:
        mine = fmt.format(get(ours)) if ours else "-"
        ratio = f"{get(ours) / get(kafka):.2f}x" if ours and get(kafka) else "-"
        lines.append(f"| {name} | {mine} | {fmt.format(get(kafka))} | {ratio} |")
    return "\n".join(lines)


@click.command()
@click.option("--records", default=40_000, show_default=True, help="records in the throughput run")
@click.option("--size", default=1024, show_default=True, help="record size in bytes")
@click.option("--partitions", default=6, show_default=True)
@click.option("--latency-seconds", default=3.0, show_default=True)
@click.option("--rate", default=300, show_default=True, help="records/s during the latency run")
@click.option("--session-timeout-ms", default=9000, show_default=True, help="broker.session.timeout.ms on both")
@click.option("--kafka-only", is_flag=True, help="measure Apache Kafka only (ours shows '-')")
def main(records: int, size: int, partitions: int, latency_seconds: float, rate: int, session_timeout_ms: int,
         kafka_only: bool) -> None:
    """Print a table: our 3-node cluster vs 3-node Apache Kafka, RF 3, acks=all."""
    ours: Result | None = None
    if not kafka_only:
        click.echo("our 3-node dev cluster ...", err=True)
        with tempfile.TemporaryDirectory(prefix="bench-cluster-") as root, _ours(Path(root), session_timeout_ms) as t:
            ours = _measure(t, size, records, partitions, latency_seconds, rate)
    click.echo("Apache Kafka 3-node KRaft cluster ...", err=True)
    with _kafka(session_timeout_ms) as target:
        kafka = _measure(target, size, records, partitions, latency_seconds, rate)
    click.echo(f"{records:,} records of {size} B over {partitions} partitions, RF 3, min.insync.replicas 2")
    click.echo(_table(ours, kafka))


if __name__ == "__main__":
    main()
