"""A 3-node Apache Kafka cluster in KRaft mode (each node broker and controller, static voters) on free
ports: the reference for the bundled broker's cluster (RF 3, min.insync.replicas 2) in tests and bench.
With more than three nodes the rest are broker-only, the layout `broker dev-cluster` uses."""

import contextlib
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.kafka_reference.jars import java_command
from lakefeed_testing.kafka_reference.tools import KAFKA_TOOLS, run_kafka_tool
from lakefeed_testing.net import free_port, port_open, wait_until

MAX_VOTERS = 3


@dataclass
class KafkaCluster:
    workdir: Path
    ports: dict[int, int]
    controller_ports: dict[int, int]
    heap: str
    procs: dict[int, "subprocess.Popen[bytes]"] = field(default_factory=dict)
    # More listeners besides PLAINTEXT (which stays the inter-broker one): name -> node -> port
    extra_listeners: dict[str, dict[int, int]] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.ports.values())

    def properties_file(self, node: int) -> Path:
        return self.workdir / f"node-{node}.properties"

    def spawn(self, node: int) -> None:
        with (self.workdir / f"node-{node}.log").open("ab") as log:
            self.procs[node] = subprocess.Popen(
                [*java_command("kafka.Kafka", heap=self.heap), str(self.properties_file(node))],
                stdout=log, stderr=subprocess.STDOUT,
            )

    def wait_listening(self, node: int, timeout: float = 120) -> None:
        process = self.procs[node]
        wait_until(lambda: port_open(self.ports[node]), timeout=timeout,
                   what=f"Kafka node {node} on port {self.ports[node]} (log: {self.workdir}/node-{node}.log)",
                   alive=lambda: process.poll() is None)

    def wait_brokers(self, count: int, timeout: float = 60) -> None:
        """Until Metadata lists `count` live brokers (registered and unfenced with the controller)."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})

        def enough() -> bool:
            try:
                return len(admin.list_topics(timeout=5).brokers) >= count
            except KafkaException:  # not ready yet: try again
                return False

        wait_until(enough, timeout=timeout, what=f"{count} Kafka brokers in Metadata")

    def kill(self, node: int) -> None:
        """kill -9: the JVM dies without a clean shutdown."""
        process = self.procs[node]
        if process.poll() is None:
            process.kill()
        process.wait(30)

    def alive(self, node: int) -> bool:
        return self.procs[node].poll() is None

    def pause(self, node: int) -> None:
        self.procs[node].send_signal(signal.SIGSTOP)

    def resume(self, node: int) -> None:
        self.procs[node].send_signal(signal.SIGCONT)

    def restart(self, node: int) -> None:
        if self.procs[node].poll() is None:
            raise ServiceError(f"Kafka node {node} is still running; kill it first")
        self.spawn(node)
        self.wait_listening(node)

    def active_controller(self) -> int:
        """The quorum leader as kafka-metadata-quorum reports it (the KRaft active controller)."""
        alive = [n for n, p in self.procs.items() if p.poll() is None]
        result = run_kafka_tool("kafka-metadata-quorum", "--bootstrap-server", f"127.0.0.1:{self.ports[alive[0]]}",
                                "describe", "--status", timeout=60)
        found = re.search(r"LeaderId:\s+(\d+)", result.stdout)
        if result.returncode != 0 or found is None:
            raise ServiceError(f"kafka-metadata-quorum failed: {result.stdout[-1000:]} {result.stderr[-2000:]}")
        return int(found.group(1))

    def stop(self) -> None:
        for process in self.procs.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # a paused JVM would never act on SIGTERM
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        for process in self.procs.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _properties(cluster: KafkaCluster, node: int, voters: str, overrides: dict[str, str]) -> str:
    replicas = str(min(3, len(cluster.ports)))
    voter = node <= MAX_VOTERS
    listeners = ",".join([f"PLAINTEXT://127.0.0.1:{cluster.ports[node]}",
                          *(f"{name}://127.0.0.1:{ports[node]}" for name, ports in cluster.extra_listeners.items())])
    settings = {
        "process.roles": "broker,controller" if voter else "broker",
        "node.id": str(node),
        "controller.quorum.voters": voters,
        "listeners": f"{listeners},CONTROLLER://127.0.0.1:{cluster.controller_ports[node]}" if voter else listeners,
        "advertised.listeners": listeners,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(cluster.workdir / f"node-{node}"),
        "num.partitions": "1",
        "default.replication.factor": replicas,
        "min.insync.replicas": "2",
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": "2",
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": "2",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
        **overrides,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _format(cluster: KafkaCluster, ids: range, cluster_id: str) -> None:
    """kafka-storage format for every node at once (one JVM each: in sequence it is most of the start-up)."""
    formats = {
        n: subprocess.Popen(
            [*java_command(KAFKA_TOOLS["kafka-storage"]), "format", "-t", cluster_id, "-c",
             str(cluster.properties_file(n)), "--ignore-formatted"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for n in ids
    }  # fmt: skip
    for n, process in formats.items():
        output, _ = process.communicate(timeout=120)
        if process.returncode != 0:
            raise ServiceError(f"kafka-storage format (node {n}) failed: {output[-2000:]}")


@contextlib.contextmanager
def kafka_cluster_reference(
    nodes: int = 3, overrides: dict[str, str] | None = None, heap: str = "512m",
    extra_listeners: tuple[str, ...] = (),
) -> Iterator[KafkaCluster]:
    """Start `nodes` Apache Kafka nodes on 127.0.0.1 (the first three vote in the controller quorum, as in
    `broker dev-cluster`) with RF 3 and min.insync.replicas 2 as defaults; yield once every broker is in
    Metadata; stop and delete everything after. `extra_listeners` names listeners each node serves on a port of
    its own besides PLAINTEXT (`cluster.extra_listeners[name][node]`); map them in `overrides`
    (`listener.security.protocol.map`)."""
    workdir = Path(tempfile.mkdtemp(prefix="lakefeed-kafka-cluster-"))
    ids = range(1, nodes + 1)
    cluster = KafkaCluster(workdir, {n: free_port() for n in ids}, {n: free_port() for n in ids}, heap,
                           extra_listeners={name: {n: free_port() for n in ids} for name in extra_listeners})
    voters = ",".join(f"{n}@127.0.0.1:{cluster.controller_ports[n]}" for n in ids if n <= MAX_VOTERS)
    cluster_id = uuid.uuid4().hex[:22]
    try:
        for n in ids:
            cluster.properties_file(n).write_text(_properties(cluster, n, voters, overrides or {}))
        _format(cluster, ids, cluster_id)
        # Start every JVM before waiting on any: a node's broker waits for the controller quorum.
        for n in ids:
            cluster.spawn(n)
        for n in ids:
            cluster.wait_listening(n)
        cluster.wait_brokers(nodes)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
