"""ACL authorization over TCP (StandardAuthorizer semantics): no ACL -> TOPIC/GROUP/CLUSTER_AUTHORIZATION_FAILED,
ALLOW ACLs (LITERAL and PREFIXED) open exactly what they name, DENY wins, super users pass, Create/Describe/
DeleteAcls through confluent-kafka's admin client, and kafka-python sees the same errors."""

from __future__ import annotations

import os
import ssl
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaProducer  # type: ignore[import-untyped]
from kafka.errors import TopicAuthorizationFailedError  # type: ignore[import-untyped]
from kio.schema.errors import ErrorCode
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)

from lakefeed_testing.kafka_reference import run_kafka_tool
from lakefeed_testing.secure_broker import (
    ADMIN_PASSWORD,
    SecureBroker,
    acl,
    add_scram_user,
    admin,
    grant,
    sasl_config,
)
from tests.broker.kio_wire import roundtrip


@pytest.fixture
def alice(secure_broker: SecureBroker) -> Iterator[tuple[str, dict[str, Any]]]:
    """A fresh SCRAM user without ACLs, and a client config logging in as that user."""
    name = f"alice-{uuid.uuid4().hex[:6]}"
    add_scram_user(secure_broker, name, "alice-pw")
    yield name, sasl_config(secure_broker, "SASL_PLAINTEXT", "SCRAM-SHA-256", name, "alice-pw")


def _produce(config: dict[str, Any], topic: str) -> KafkaError | None:
    """The delivery error of one record (None: acknowledged)."""
    results: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 5000, "log_level": 0})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: results.append(err))
    producer.flush(10)
    assert results, "no delivery report"
    return results[0]


def _create_topic(broker: SecureBroker, topic: str) -> None:
    client = admin(broker)
    client.create_topics([NewTopic(topic, 1)])[topic].result(timeout=10)


def test_no_acl_means_topic_authorization_failed_and_super_user_passes(
        secure_broker: SecureBroker, alice: tuple[str, dict[str, Any]]) -> None:
    topic = f"acl-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    error = _produce(alice[1], topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    # Super users: the PLAIN admin and the tls-admin client certificate.
    assert _produce(sasl_config(secure_broker, "SASL_SSL", "PLAIN", "admin", ADMIN_PASSWORD), topic) is None
    tls = {"bootstrap.servers": secure_broker.bootstrap("SSL"), "security.protocol": "SSL",
           "ssl.ca.location": str(secure_broker.ca.ca_file),
           "ssl.certificate.location": str(secure_broker.tls_admin.certificate),
           "ssl.key.location": str(secure_broker.tls_admin.key)}
    assert _produce(tls, topic) is None
    # A certificate without ACLs and an anonymous PLAINTEXT client are denied like alice.
    other = {**tls, "ssl.certificate.location": str(secure_broker.client.certificate),
             "ssl.key.location": str(secure_broker.client.key)}
    assert _produce(other, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[union-attr]
    # Topics alice may not describe are left out of her all-topics metadata.
    alice_admin = AdminClient(alice[1])
    assert topic not in alice_admin.list_topics(timeout=10).topics
    assert topic in admin(secure_broker).list_topics(timeout=10).topics


def test_prefixed_allow_then_deny_wins(secure_broker: SecureBroker, alice: tuple[str, dict[str, Any]]) -> None:
    name, config = alice
    prefix = f"pre-{uuid.uuid4().hex[:6]}-"
    topic, other = prefix + "orders", f"x{prefix}orders"
    for t in (topic, other):
        _create_topic(secure_broker, t)
    grant(secure_broker, acl(f"User:{name}", ResourceType.TOPIC, prefix, AclOperation.WRITE,
                             pattern=ResourcePatternType.PREFIXED))
    assert _produce(config, topic) is None
    assert _produce(config, other).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[union-attr]
    grant(secure_broker, acl(f"User:{name}", ResourceType.TOPIC, topic, AclOperation.WRITE,
                             AclPermissionType.DENY))
    assert _produce(config, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[union-attr]


def test_consumer_needs_group_and_topic_read(secure_broker: SecureBroker, alice: tuple[str, dict[str, Any]]) -> None:
    name, config = alice
    topic, group = f"c-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    assert _produce(sasl_config(secure_broker, "SASL_SSL", "PLAIN", "admin", ADMIN_PASSWORD), topic) is None

    def consume() -> tuple[list[bytes], list[int]]:
        consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest", "log_level": 0})
        consumer.subscribe([topic])
        values: list[bytes] = []
        errors: list[int] = []
        for _ in range(30):
            message = consumer.poll(0.3)
            if message is None:
                continue
            if message.error() is not None:
                errors.append(message.error().code())
                break
            values.append(message.value())
            break
        consumer.close()
        return values, errors

    assert consume() == ([], [KafkaError.GROUP_AUTHORIZATION_FAILED])
    grant(secure_broker, acl(f"User:{name}", ResourceType.GROUP, group, AclOperation.READ))
    assert consume() == ([], [KafkaError.TOPIC_AUTHORIZATION_FAILED])
    grant(secure_broker, acl(f"User:{name}", ResourceType.TOPIC, topic, AclOperation.READ))
    assert consume() == ([b"v"], [])


def test_topic_admin_and_acl_admin_need_their_operations(secure_broker: SecureBroker,
                                                         alice: tuple[str, dict[str, Any]]) -> None:
    name, config = alice
    client = AdminClient(config)
    topic = f"adm-{uuid.uuid4().hex[:6]}"
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        client.create_topics([NewTopic(topic, 1)])[topic].result(timeout=10)
    grant(secure_broker, acl(f"User:{name}", ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE))
    client.create_topics([NewTopic(topic, 1)])[topic].result(timeout=10)
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        client.delete_topics([topic])[topic].result(timeout=10)
    binding = acl(f"User:{name}", ResourceType.TOPIC, "*", AclOperation.DELETE)
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        for future in client.create_acls([binding]).values():
            future.result(timeout=10)
    grant(secure_broker, binding)
    client.delete_topics([topic])[topic].result(timeout=10)


def test_describe_and_delete_acls(secure_broker: SecureBroker, alice: tuple[str, dict[str, Any]]) -> None:
    name, config = alice
    topic = f"d-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    grant(secure_broker, acl(f"User:{name}", ResourceType.TOPIC, topic, AclOperation.WRITE),
          acl(f"User:{name}", ResourceType.TOPIC, topic, AclOperation.READ))
    client = admin(secure_broker)
    mine = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{name}", None,
                            AclOperation.ANY, AclPermissionType.ANY)
    described = client.describe_acls(mine).result(timeout=10)
    assert sorted((b.name, b.operation.name) for b in described) == [(topic, "READ"), (topic, "WRITE")]
    assert _produce(config, topic) is None
    write_only = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.MATCH, f"User:{name}", None,
                                  AclOperation.WRITE, AclPermissionType.ALLOW)
    deleted = client.delete_acls([write_only])[write_only].result(timeout=10)
    assert [(b.name, b.operation.name) for b in deleted] == [(topic, "WRITE")]
    assert _produce(config, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[union-attr]
    assert [b.operation.name for b in client.describe_acls(mine).result(timeout=10)] == ["READ"]


def test_kafka_python_sees_topic_authorization_failed(secure_broker: SecureBroker,
                                                      alice: tuple[str, dict[str, Any]]) -> None:
    topic = f"kp-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    producer = KafkaProducer(bootstrap_servers=secure_broker.bootstrap("SASL_PLAINTEXT"),
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                             sasl_plain_username=alice[0], sasl_plain_password="alice-pw", max_block_ms=5000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"v").get(timeout=10)
    finally:
        producer.close(timeout=5)


@pytest.mark.skipif(not os.environ.get("LAKEFEED_SECURITY_JAVA"), reason="Kafka's Java tools take ~10 s a run;"
                    " LAKEFEED_SECURITY_JAVA=1 runs them (docs/development.md)")
def test_kafka_acls_tool(secure_broker: SecureBroker, tmp_path: Any) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
        f' username="admin" password="{ADMIN_PASSWORD}";\n')
    common = ("--bootstrap-server", secure_broker.bootstrap("SASL_PLAINTEXT"), "--command-config", str(properties))
    topic = f"java-{uuid.uuid4().hex[:6]}"
    added = run_kafka_tool("kafka-acls", *common, "--add", "--allow-principal", "User:bob", "--operation", "Read",
                           "--topic", topic, timeout=90)
    assert added.returncode == 0, added.stderr[-2000:]
    listed = run_kafka_tool("kafka-acls", *common, "--list", "--topic", topic, timeout=90)
    assert "principal=User:bob, host=*, operation=READ, permissionType=ALLOW" in listed.stdout, listed.stderr[-2000:]


def test_produce_cannot_auto_create_without_create(secure_broker: SecureBroker) -> None:
    """WRITE on a prefix does not let a raw Produce create topics under it (clients ask Metadata first, which
    needs CREATE to auto-create; a Produce must not bypass that)."""
    import datetime

    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    from tests.broker.kio_wire import frame, record_batch
    from tests.broker.security.test_sasl import raw_plain_login, read_response

    prefix = f"raw-{uuid.uuid4().hex[:6]}-"
    grant(secure_broker, acl("User:plainuser", ResourceType.TOPIC, prefix, AclOperation.WRITE,
                             pattern=ResourcePatternType.PREFIXED))
    with raw_plain_login(secure_broker, "plainuser", "plain-secret") as sock:
        assert sock.recv(4) == b"\0\0\0\0"
        data = (PartitionProduceData(index=0, records=record_batch([b"v"])),)
        request = ProduceRequest(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5), topic_data=(
            TopicProduceData(name=prefix + "new", partition_data=data),
            TopicProduceData(name="elsewhere", partition_data=data)))
        sock.sendall(frame(0, 9, request, correlation_id=3))
        codes = {t.name: t.partition_responses[0].error_code for t in read_response(sock, 0, 9).responses}
    assert codes == {prefix + "new": KafkaError.UNKNOWN_TOPIC_OR_PART,
                     "elsewhere": KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert prefix + "new" not in admin(secure_broker).list_topics(timeout=10).topics


def _describe_topic_partitions(broker: SecureBroker, names: list[str]) -> list[tuple[str, int, int]]:
    """(topic, error code, partition count) of DescribeTopicPartitions (API 75, which Kafka's Java admin uses to
    describe topics) as the client certificate's principal, which has no ACLs but the ones a test grants."""
    from kio.schema.describe_topic_partitions.v0.request import DescribeTopicPartitionsRequest, TopicRequest

    context = ssl.create_default_context(cafile=str(broker.ca.ca_file))
    context.load_cert_chain(str(broker.client.certificate), str(broker.client.key))
    request = DescribeTopicPartitionsRequest(topics=tuple(TopicRequest(name=n) for n in names),
                                             response_partition_limit=100, cursor=None)
    _, response = roundtrip(broker.ports["SSL"], 75, 0, request, tls=context)
    return sorted((t.name, int(t.error_code), len(t.partitions)) for t in response.topics)


def test_describe_topic_partitions_shows_only_what_the_caller_may_describe(secure_broker: SecureBroker) -> None:
    """Kafka's DescribeTopicPartitionsRequestHandler: a named topic the caller may not DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED whether it exists or not; asked for every topic, only the describable ones."""
    topic, missing = f"dtp-{uuid.uuid4().hex[:6]}", f"dtp-missing-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    taf = int(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    assert _describe_topic_partitions(secure_broker, [topic, missing]) == [(topic, taf, 0), (missing, taf, 0)]
    principal = "User:CN=client,O=lakefeed-test"
    grant(secure_broker, acl(principal, ResourceType.TOPIC, topic, AclOperation.DESCRIBE))
    assert _describe_topic_partitions(secure_broker, [topic, missing]) == [(topic, 0, 1), (missing, taf, 0)]
    assert _describe_topic_partitions(secure_broker, []) == [(topic, 0, 1)]  # every topic: the describable ones


def test_transactions_need_write_on_the_transactional_id_and_the_topics(
        secure_broker: SecureBroker, alice: tuple[str, dict[str, Any]]) -> None:
    """Kafka's rules: InitProducerId/EndTxn need WRITE on the transactional id, AddPartitionsToTxn also WRITE
    on each topic; with both, the transaction commits (same test against Kafka with LAKEFEED_SECURITY_IMPL)."""
    name, config = alice
    topic, txn = f"acl-{uuid.uuid4().hex[:6]}", f"tx-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    producer = Producer({**config, "transactional.id": txn, "log_level": 0})
    with pytest.raises(KafkaException) as caught:
        producer.init_transactions(15)
    assert caught.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, caught.value
    grant(secure_broker, acl(f"User:{name}", ResourceType.TRANSACTIONAL_ID, txn, AclOperation.WRITE))
    producer = Producer({**config, "transactional.id": txn, "log_level": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    reports: list[KafkaError | None] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.append(err))
    with pytest.raises(KafkaException):
        producer.commit_transaction(15)  # the partition could not be added to the transaction
    producer.poll(0)
    assert reports and reports[0] is not None and reports[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, reports
    grant(secure_broker, acl(f"User:{name}", ResourceType.TOPIC, topic, AclOperation.WRITE))
    producer = Producer({**config, "transactional.id": txn, "log_level": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"v")
    producer.commit_transaction(30)


def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic(secure_broker: SecureBroker) -> None:
    """Kafka's KafkaApis.handleOffsetDeleteRequest: without DELETE on the group the whole request is
    GROUP_AUTHORIZATION_FAILED; a topic the caller may not READ is TOPIC_AUTHORIZATION_FAILED per partition."""
    principal = "User:CN=client,O=lakefeed-test"  # the `client` certificate, which no ACL names
    topic, group = f"acl-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _create_topic(secure_broker, topic)
    super_user = admin(secure_broker)  # kept referenced: a destroyed client fails its futures
    committed = super_user.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 5)])])
    committed[group].result(timeout=10)
    tls = ssl.create_default_context(cafile=str(secure_broker.ca.ca_file))
    tls.load_cert_chain(str(secure_broker.client.certificate), str(secure_broker.client.key))
    request = OffsetDeleteRequest(group_id=group, topics=(
        OffsetDeleteRequestTopic(name=topic, partitions=(OffsetDeleteRequestPartition(partition_index=0),)),))

    def delete() -> tuple[ErrorCode, list[ErrorCode]]:
        _, answer = roundtrip(secure_broker.ports["SSL"], 47, 0, request, tls=tls)
        return answer.error_code, [p.error_code for t in answer.topics for p in t.partitions]

    assert delete() == (ErrorCode.group_authorization_failed, [])
    grant(secure_broker, acl(principal, ResourceType.GROUP, group, AclOperation.DELETE))
    assert delete() == (ErrorCode.none, [ErrorCode.topic_authorization_failed])
    grant(secure_broker, acl(principal, ResourceType.TOPIC, topic, AclOperation.READ))
    assert delete() == (ErrorCode.none, [ErrorCode.none])
