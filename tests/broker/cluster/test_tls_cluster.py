"""A 3-node cluster secured as Kafka's KRaft docs describe it (docs/broker.md "Security"): clients on an SSL
listener (CLIENT), replication on an SSL listener with mutual TLS (INTERNAL, `inter.broker.listener.name`), the
controller quorum on SSL with mutual TLS (`controller.listener.names=CONTROLLER`). Real processes over TCP,
confluent-kafka clients.

What fails without cluster TLS: an acks=all write needs a follower's fetch (min.insync.replicas=2), which can only
go through INTERNAL; the brokers join only through a TLS quorum; the plaintext probes below get no answer."""

from __future__ import annotations

import socket
import ssl
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.dev_cluster import DevCluster
from lakefeed_testing.own_cluster import own_cluster
from lakefeed_testing.tls import TestCA
from tests.broker.cluster.harness import LAG_MS, mutual_tls_settings, until

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class TlsCluster:
    dev: DevCluster
    ca: TestCA
    client: dict[str, str]  # what a client needs: SSL and the CA (the CLIENT listener asks for no certificate)

    def admin(self) -> AdminClient:
        return AdminClient({**self.client, "socket.timeout.ms": 3000})


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsCluster]:
    root = tmp_path_factory.mktemp("tls-cluster")
    ca = TestCA(root / "pki")
    node = ca.issue("broker", server=True)  # every node's certificate: its SAN is 127.0.0.1
    settings = mutual_tls_settings("SSL", node.keystore, ca.ca_file)
    client = {"security.protocol": "SSL", "ssl.ca.location": str(ca.ca_file)}
    with own_cluster(root / "cluster", 3, settings, listener_names=("CLIENT", "INTERNAL"), client=client) as dev:
        yield TlsCluster(dev, ca, {**client, "bootstrap.servers": dev.bootstrap_servers()})


def _create(cluster: TlsCluster, topic: str, assignment: list[list[int]]) -> None:
    admin = cluster.admin()
    spec = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([spec])[topic].result(15)

    def full_isr() -> bool:
        md = admin.list_topics(topic, timeout=5).topics[topic]
        return md.error is None and all(len(p.isrs) == len(assignment[0]) for p in md.partitions.values())

    until(full_isr, 20, f"{topic}: every replica in the ISR")


def _produce(cluster: TlsCluster, topic: str, values: list[bytes]) -> None:
    producer = Producer({**cluster.client, "acks": "all", "enable.idempotence": True, "message.timeout.ms": 30_000})
    errors: list[str] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
    assert producer.flush(40) == 0
    assert errors == []


def _consume(cluster: TlsCluster, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({**cluster.client, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


def test_clients_replication_and_metadata_over_tls(tls_cluster: TlsCluster) -> None:
    dev = tls_cluster.dev
    # Clients on CLIENT are told every broker's CLIENT address, never the INTERNAL one (Kafka's per-listener
    # Metadata), so they can reach leaders on other nodes.
    brokers = tls_cluster.admin().list_topics(timeout=10).brokers
    assert {b.id: (b.host, b.port) for b in brokers.values()} == {n: ("127.0.0.1", dev.port(n)) for n in dev.node_ids}
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    _create(tls_cluster, topic, [[1, 2, 3]])
    values = [f"v{i}".encode() for i in range(20)]
    _produce(tls_cluster, topic, values)  # acks=all, min.insync.replicas=2: a follower fetched them over INTERNAL
    assert _consume(tls_cluster, topic, len(values)) == values
    # Past replica.lag.time.max.ms the followers are still in the ISR: they keep fetching over mutual TLS.
    time.sleep(LAG_MS / 1000 + 0.5)
    partition = tls_cluster.admin().list_topics(topic, timeout=5).topics[topic].partitions[0]
    assert sorted(partition.isrs) == [1, 2, 3]


def _kafka_answer(port: int, payload: bytes) -> bytes:
    """What a plaintext client gets back for `payload` within 3 s (b"" when the server closed the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        sock.sendall(payload)
        try:
            return sock.recv(4096)
        except (TimeoutError, ConnectionError):
            return b""


def test_plaintext_and_certificateless_peers_are_refused(tls_cluster: TlsCluster) -> None:
    dev = tls_cluster.dev
    internal = dev.listener_port("INTERNAL", 1)
    api_versions_v0 = struct.pack(">ihhih", 10, 18, 0, 7, -1)  # size, api key, version, correlation id, null id
    answer = _kafka_answer(internal, api_versions_v0)
    # A TLS server answers garbage with a TLS alert (0x15) or by closing, never with a Kafka frame for id 7.
    assert len(answer) < 8 or struct.unpack(">i", answer[4:8])[0] != 7, answer
    assert answer[:1] in (b"", b"\x15")
    controller_answer = _kafka_answer(dev.controller_port(1), b'{"op": "status"}\n')
    assert not controller_answer.startswith(b"{"), controller_answer
    # TLS with a trusted server but no client certificate: mutual TLS refuses it (TLS 1.3 reports it on the
    # first read, TLS 1.2 in the handshake).
    context = ssl.create_default_context(cafile=str(tls_cluster.ca.ca_file))
    for port in (internal, dev.controller_port(1)):
        with socket.create_connection(("127.0.0.1", port), timeout=3) as raw, \
                pytest.raises((ssl.SSLError, ConnectionError)), \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(api_versions_v0 if port == internal else b'{"op": "status"}\n')
            if not tls.recv(4096):
                raise ConnectionError("closed without an answer")
    # With the node's certificate the quorum answers (DevCluster speaks TLS to it): the refusals above are TLS's.
    status = dev.controller_status(1)
    assert status is not None and status.get("ok") is True


def test_killing_the_controller_and_leader_elects_others(tls_cluster: TlsCluster) -> None:
    dev = tls_cluster.dev
    controller = until(dev.active_controller, 15, "an active controller (status over TLS)")
    assert isinstance(controller, int)
    others = [n for n in dev.node_ids if n != controller]
    topic = f"tls-fail-{uuid.uuid4().hex[:8]}"
    _create(tls_cluster, topic, [[controller, *others]])  # the active controller leads the partition
    _produce(tls_cluster, topic, [b"before"])
    dev.kill(controller)
    try:
        # A new quorum leader: the remaining voters elected it over TLS.
        new_controller = until(lambda: (c := dev.active_controller()) not in (None, controller) and c, 20,
                               "another active controller")
        assert new_controller in others

        def new_leader() -> int | None:
            try:
                leader = int(tls_cluster.admin().list_topics(topic, timeout=3).topics[topic].partitions[0].leader)
            except KafkaException:
                return None
            return leader if leader in others else None

        until(new_leader, 20, f"{topic}: a leader other than node {controller}")
        _produce(tls_cluster, topic, [b"after"])  # acks=all with the two remaining nodes, over INTERNAL
        assert _consume(tls_cluster, topic, 2) == [b"before", b"after"]
    finally:
        dev.restart(controller)
