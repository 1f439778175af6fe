"""SCRAM credentials and ACLs survive a broker restart (kept in the data dir, like Kafka keeps them in its
metadata log); the PLAIN passwords of the JAAS config are never shown by DescribeConfigs."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.processes import stop_process
from lakefeed_testing.secure_broker import start_broker
from tests.broker.security.test_acls import _produce


def test_credentials_and_acls_survive_a_restart(tmp_path: Path) -> None:
    port = free_port()
    properties = {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_root="root-pw";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:root",
    }
    base = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT"}
    root = {**base, "sasl.mechanism": "PLAIN", "sasl.username": "root", "sasl.password": "root-pw"}
    app = {**base, "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "app", "sasl.password": "app-pw"}
    process = start_broker(tmp_path, properties)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: process.poll() is None)
        admin = AdminClient(root)
        admin.create_topics([NewTopic("events", 1)])["events"].result(timeout=10)
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        upsert = UserScramCredentialUpsertion("app", info, b"app-pw")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=10)
        for future in admin.create_acls([AclBinding(ResourceType.TOPIC, "events", ResourcePatternType.LITERAL,
                                                    "User:app", "*", AclOperation.WRITE,
                                                    AclPermissionType.ALLOW)]).values():
            future.result(timeout=10)
        resource = ConfigResource(ConfigResource.Type.BROKER, "1")
        configs = admin.describe_configs([resource])[resource].result(timeout=10)
        jaas = configs["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
        assert jaas.value is None and jaas.is_sensitive
        del admin
        stop_process(process)
        process = start_broker(tmp_path, properties)
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: process.poll() is None)
        assert _produce(app, "events") is None
        denied = _produce(app, "other")
        assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        stop_process(process)
    assert "root-pw" not in (tmp_path / "broker.log").read_text()
