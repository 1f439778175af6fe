"""SCRAM users and ACLs on a 3-node cluster: kept in the cluster metadata (as KRaft keeps them), so what is made
through one broker holds on every broker and after a node is killed and restarted.

Clients log in with SCRAM-SHA-512 on a SASL_SSL listener (CLIENT); the nodes replicate over mutual TLS (INTERNAL)
and the quorum runs over mutual TLS (CONTROLLER); the nodes' certificate principal is a super user, so followers
may fetch (CLUSTER_ACTION) and the test's admin client (the same certificate, on INTERNAL) may manage users and
ACLs. Real processes over TCP, confluent-kafka clients.

What fails without credentials and ACLs in the metadata: a user made through one node cannot log in on another;
an ACL made through one node does not let the user write to a partition another node leads.
`LAKEFEED_CLUSTER_TESTS=kafka` runs the same client steps against three Apache Kafka 4.3 nodes."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from lakefeed_testing.kafka_reference import kafka_cluster_reference
from lakefeed_testing.own_cluster import own_cluster
from lakefeed_testing.tls import Pem, TestCA
from tests.broker.cluster.harness import SETTINGS, mutual_tls_settings, until

pytestmark = pytest.mark.integration

NODE_PRINCIPAL = "User:CN=broker,O=lakefeed-test"
PASSWORD = "alice-secret"


@dataclass(frozen=True)
class SaslCluster:
    node_ids: list[int]
    client_port: Callable[[int], int]  # a node's SASL_SSL listener
    kill: Callable[[int], None]
    restart: Callable[[int], None]
    admin_settings: dict[str, str]  # a super user's client settings
    ca_file: str

    def admin(self) -> AdminClient:
        return AdminClient({**self.admin_settings, "socket.timeout.ms": 5000})

    def user(self, node: int, password: str = PASSWORD, **extra: object) -> dict[str, object]:
        """alice's client settings, bootstrapped through node `node` only: its first login is on that node."""
        return {"bootstrap.servers": f"127.0.0.1:{self.client_port(node)}",
                "security.protocol": "SASL_SSL", "ssl.ca.location": self.ca_file, "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "alice", "sasl.password": password, **extra}


COMMON = {
    **SETTINGS,
    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "100",
}


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    root = tmp_path_factory.mktemp("sasl-cluster")
    ca = TestCA(root / "pki")
    node = ca.issue("broker", server=True)
    if os.environ.get("LAKEFEED_CLUSTER_TESTS") == "kafka":
        yield from _kafka(ca, node)
        return
    settings = {**mutual_tls_settings("SASL_SSL", node.keystore, ca.ca_file), **COMMON, "super.users": NODE_PRINCIPAL}
    internal = {"security.protocol": "SSL", "ssl.ca.location": str(ca.ca_file),
                "ssl.certificate.location": str(node.certificate), "ssl.key.location": str(node.key)}
    with own_cluster(root / "cluster", 3, settings, listener_names=("INTERNAL", "CLIENT"), client=internal) as dev:
        yield SaslCluster(dev.node_ids, lambda n: dev.listener_port("CLIENT", n), dev.kill, dev.restart,
                          {**internal, "bootstrap.servers": dev.bootstrap_servers()}, str(ca.ca_file))


def _kafka(ca: TestCA, node: Pem) -> Iterator[SaslCluster]:
    """Three Apache Kafka 4.3 nodes configured the same way for clients: CLIENT is SASL_SSL with SCRAM-SHA-512 and
    the StandardAuthorizer; the nodes talk PLAINTEXT among themselves, as User:ANONYMOUS, a super user (the
    admin client uses that listener too)."""
    overrides = {
        **COMMON,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(node.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.ca_file),
        "listener.name.client.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "super.users": "User:ANONYMOUS",
    }
    with kafka_cluster_reference(3, overrides, extra_listeners=("CLIENT",)) as kafka:
        yield SaslCluster(sorted(kafka.ports), lambda n: kafka.extra_listeners["CLIENT"][n], kafka.kill,
                          kafka.restart, {"bootstrap.servers": kafka.bootstrap_servers}, str(ca.ca_file))


def _logs_in(cluster: SaslCluster, node: int, password: str = PASSWORD) -> bool:
    """Whether alice's SCRAM login on `node` succeeds (Metadata needs no ACL beyond a successful login)."""
    # log_level 0: librdkafka would log each failed login retry until the client is gone
    admin = AdminClient(cluster.user(node, password, **{"socket.timeout.ms": 3000, "log_level": 0}))
    try:
        admin.list_topics(timeout=4)
    except KafkaException:
        return False
    return True


def _produce_everywhere(cluster: SaslCluster, topic: str, node: int, partitions: int) -> list[KafkaError | None]:
    """One record to each partition (each led by another node), as alice bootstrapped through `node`."""
    producer = Producer(cluster.user(node, **{"acks": "all", "message.timeout.ms": 8000, "retries": 0}))
    results: list[KafkaError | None] = []
    for partition in range(partitions):
        producer.produce(topic, f"p{partition}".encode(), partition=partition,
                         on_delivery=lambda err, _m: results.append(err))
    producer.flush(20)
    return results


def _acl(topic: str, operation: AclOperation, kind: ResourceType = ResourceType.TOPIC) -> AclBinding:
    return AclBinding(kind, topic, ResourcePatternType.LITERAL, "User:alice", "*", operation,
                      AclPermissionType.ALLOW)


def test_a_user_and_acls_made_through_one_node_hold_on_every_node_and_after_a_restart(
    sasl_cluster: SaslCluster,
) -> None:
    admin = sasl_cluster.admin()
    assert not _logs_in(sasl_cluster, 2)  # no such user yet
    upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(15)
    for node in sasl_cluster.node_ids:
        until(lambda n=node: _logs_in(sasl_cluster, n), 10, f"alice logs in on node {node}")
        assert not _logs_in(sasl_cluster, node, "wrong-password")
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(10)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)]

    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    spec = NewTopic(topic, num_partitions=3, replica_assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    admin.create_topics([spec])[topic].result(15)
    until(lambda: all(p.leader == p.replicas[0] for p in
                      admin.list_topics(topic, timeout=5).topics[topic].partitions.values()), 20, "preferred leaders")
    denied = _produce_everywhere(sasl_cluster, topic, 1, 3)
    assert denied and all(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in denied), denied

    for future in admin.create_acls([_acl(topic, AclOperation.WRITE)]).values():
        future.result(15)

    def writes_everywhere() -> bool:
        return _produce_everywhere(sasl_cluster, topic, 3, 3) == [None, None, None]

    until(writes_everywhere, 15, "alice writes to the partitions each node leads")
    # Reading needs READ on the topic and on the group: without the group's, GROUP_AUTHORIZATION_FAILED.
    for future in admin.create_acls([_acl(topic, AclOperation.READ)]).values():
        future.result(15)
    group = f"g-{topic}"
    assert _consume_error(sasl_cluster, topic, group, 2) == KafkaError.GROUP_AUTHORIZATION_FAILED
    for future in admin.create_acls([_acl(group, AclOperation.READ, ResourceType.GROUP)]).values():
        future.result(15)
    assert _consume_error(sasl_cluster, topic, group, 2) is None

    # Node 2 killed and restarted: it finds the user and the ACLs again in the metadata.
    sasl_cluster.kill(2)
    sasl_cluster.restart(2)
    until(lambda: _logs_in(sasl_cluster, 2), 30, "alice logs in on the restarted node 2")
    until(lambda: _produce_everywhere(sasl_cluster, topic, 2, 3) == [None, None, None], 30,
          "alice writes everywhere after node 2's restart")

    # Deleted through one node, the ACL is gone on all.
    deleted = admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                                                  "User:alice", None, AclOperation.WRITE, AclPermissionType.ANY)])
    assert [len(f.result(15)) for f in deleted.values()] == [1]
    until(lambda: all(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
                      for e in _produce_everywhere(sasl_cluster, topic, 1, 3)), 15, "writes denied on every node")
    remaining = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice",
                                                     None, AclOperation.ANY, AclPermissionType.ANY)).result(10)
    assert sorted((b.name, b.operation) for b in remaining) == sorted([(topic, AclOperation.READ),
                                                                       (group, AclOperation.READ)])


def _consume_error(cluster: SaslCluster, topic: str, group: str, node: int) -> int | None:
    """The first error code alice's consumer in `group` meets reading `topic` (None: it read a record)."""
    consumer = Consumer(cluster.user(node, **{"group.id": group, "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                return None
            if message.error().code() != KafkaError._PARTITION_EOF:
                return int(message.error().code())
    finally:
        consumer.close()
    raise AssertionError(f"alice's consumer in {group} neither read {topic} nor failed in 20 s")
