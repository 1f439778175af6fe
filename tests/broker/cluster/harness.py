"""What the cluster tests need of a cluster, for ours (`broker dev-cluster`'s DevCluster) and for the Apache
Kafka reference cluster alike, so the same tests can be run against Kafka to check that they hold for Kafka's
semantics (`LAKEFEED_CLUSTER_TESTS=kafka`); CI runs them against ours."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from broker.dev_cluster import DevCluster
from lakefeed_testing.errors import ServiceError
from lakefeed_testing.kafka_reference import kafka_cluster_reference
from lakefeed_testing.own_cluster import own_cluster, wait_cluster_formed

LAG_MS = 2000  # replica.lag.time.max.ms: small, so a stopped follower leaves the ISR quickly
SETTINGS = {
    "replica.lag.time.max.ms": str(LAG_MS),
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


def mutual_tls_settings(client_protocol: str, keystore: Path, ca_file: Path) -> dict[str, str]:
    """A cluster secured as Kafka's KRaft docs describe it: clients on CLIENT (`client_protocol`), replication on
    INTERNAL and the quorum on CONTROLLER, both SSL with mutual TLS (every node presents `keystore`)."""
    return {
        **SETTINGS,
        "listener.security.protocol.map": f"CLIENT:{client_protocol},INTERNAL:SSL,CONTROLLER:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "controller.listener.names": "CONTROLLER",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.location": str(ca_file),
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.controller.ssl.client.auth": "required",
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "100",
    }


@dataclass(frozen=True)
class Cluster:
    name: str
    bootstrap: str
    ports: dict[int, int]
    kill: Callable[[int], None]
    restart: Callable[[int], None]
    pause: Callable[[int], None]
    resume: Callable[[int], None]
    alive: Callable[[int], bool]
    active_controller: Callable[[], int | None]
    wait_formed: Callable[[], None]
    data_dir: Callable[[int], Path]  # a node's log dir: partitions in Kafka's layout, for storage damage
    metrics_url: Callable[[int], str | None] = lambda _: None  # a node's Prometheus endpoint (ours only)

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.ports)

    def bootstrap_of(self, nodes: list[int]) -> str:
        """Bootstrap through these nodes only (a paused node accepts TCP connections but never answers)."""
        return ",".join(f"127.0.0.1:{self.ports[n]}" for n in nodes)

    def heal(self) -> None:
        """Resume paused nodes, restart dead ones, wait until every broker is back: each test starts whole."""
        for n in self.node_ids:
            if self.alive(n):
                self.resume(n)
            else:
                self.restart(n)
        self.wait_formed()


def _ours(dev: DevCluster) -> Cluster:
    return Cluster(
        "ours", dev.bootstrap_servers(), {n: dev.port(n) for n in dev.node_ids}, dev.kill, dev.restart,
        dev.pause, dev.resume, dev.alive, dev.active_controller, lambda: wait_cluster_formed(dev, timeout=30),
        lambda n: dev.data_dir / f"node-{n}", lambda n: f"http://127.0.0.1:{dev.metrics_port(n)}/metrics",
    )  # fmt: skip


@contextlib.contextmanager
def start_cluster(target: str, root: Path, nodes: int) -> Iterator[Cluster]:
    if target == "kafka":
        with kafka_cluster_reference(nodes, dict(SETTINGS)) as kafka:

            def controller() -> int | None:
                try:
                    return kafka.active_controller()
                except ServiceError:  # no quorum leader yet
                    return None

            yield Cluster(
                "kafka", kafka.bootstrap_servers, dict(kafka.ports), kafka.kill, kafka.restart, kafka.pause,
                kafka.resume, kafka.alive, controller, lambda: kafka.wait_brokers(nodes, timeout=60),
                lambda n: kafka.workdir / f"node-{n}",
            )  # fmt: skip
        return
    with own_cluster(root, nodes, dict(SETTINGS)) as dev:
        yield _ours(dev)


def until(check: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> object:
    """Poll `check` until it returns something truthy (returned); a client error counts as "not yet".
    Fails after `timeout` seconds with `what`: the cluster tests never hang."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except KafkaException as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")
