"""SASL over TCP: PLAIN and SCRAM logins with confluent-kafka and kafka-python, wrong passwords answered
SASL_AUTHENTICATION_FAILED, SCRAM credentials managed with AlterUserScramCredentials (confluent-kafka's
admin and Kafka's own kafka-configs) and kept across a restart."""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramMechanism,
    UserScramCredentialDeletion,
)
from kafka import KafkaAdminClient  # type: ignore[import-untyped]
from kio.serial import entity_reader

from broker.protocol.apis import response_class
from lakefeed_testing.kafka_reference import run_kafka_tool
from lakefeed_testing.secure_broker import ADMIN_PASSWORD, SecureBroker, add_scram_user, admin, ours_only, sasl_config
from tests.broker.kio_wire import frame, read_frame


def login_error(config: dict[str, Any]) -> KafkaError | None:
    """The first client error of a producer that logs in with `config` (None: it got metadata)."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    deadline = time.monotonic() + 8
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
        try:
            producer.list_topics(timeout=0.2)
            return None
        except KafkaException:
            continue
    return errors[0] if errors else None


@pytest.mark.parametrize(("listener", "mechanism"), [("SASL_PLAINTEXT", "SCRAM-SHA-256"),
                                                      ("SASL_SSL", "SCRAM-SHA-512")])
def test_scram_login_and_wrong_password(secure_broker: SecureBroker, listener: str, mechanism: str) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    add_scram_user(secure_broker, user, "right-pw", mechanism)
    good = AdminClient(sasl_config(secure_broker, listener, mechanism, user, "right-pw"))
    assert [b.port for b in good.list_topics(timeout=10).brokers.values()] == [secure_broker.ports[listener]]
    error = login_error(sasl_config(secure_broker, listener, mechanism, user, "wrong-pw"))
    assert error is not None and error.code() == KafkaError._AUTHENTICATION, error
    assert "invalid credentials" in error.str()
    if ours_only(secure_broker):
        assert "invalid credentials with SASL mechanism " + mechanism in secure_broker.log_text()


def test_plain_login_with_kafka_python_and_wrong_password(secure_broker: SecureBroker) -> None:
    client = KafkaAdminClient(bootstrap_servers=secure_broker.bootstrap("SASL_PLAINTEXT"),
                              security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                              sasl_plain_username="admin", sasl_plain_password=ADMIN_PASSWORD)
    try:
        assert isinstance(client.list_topics(), list)
    finally:
        client.close()
    error = login_error(sasl_config(secure_broker, "SASL_PLAINTEXT", "PLAIN", "admin", "nope"))
    assert error is not None and "Invalid username or password" in error.str()


def test_kafka_python_scram_sha_512(secure_broker: SecureBroker) -> None:
    user = f"py-{uuid.uuid4().hex[:6]}"
    add_scram_user(secure_broker, user, "py-secret", "SCRAM-SHA-512")
    client = KafkaAdminClient(bootstrap_servers=secure_broker.bootstrap("SASL_SSL"), security_protocol="SASL_SSL",
                              ssl_cafile=str(secure_broker.ca.ca_file), sasl_mechanism="SCRAM-SHA-512",
                              sasl_plain_username=user, sasl_plain_password="py-secret")
    try:
        assert isinstance(client.list_topics(), list)
    finally:
        client.close()


def test_describe_and_delete_scram_credentials(secure_broker: SecureBroker) -> None:
    user = f"d-{uuid.uuid4().hex[:6]}"
    add_scram_user(secure_broker, user, "pw-256", "SCRAM-SHA-256")
    add_scram_user(secure_broker, user, "pw-512", "SCRAM-SHA-512")
    client = admin(secure_broker)
    described = client.describe_user_scram_credentials([user])[user].result(timeout=10)
    assert sorted((i.mechanism.name, i.iterations) for i in described.scram_credential_infos) == [
        ("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 4096)]
    deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)
    for future in client.alter_user_scram_credentials([deletion]).values():
        future.result(timeout=10)
    error = login_error(sasl_config(secure_broker, "SASL_PLAINTEXT", "SCRAM-SHA-256", user, "pw-256"))
    assert error is not None and error.code() == KafkaError._AUTHENTICATION
    with pytest.raises(KafkaException, match=r"RESOURCE_NOT_FOUND|does not exist"):
        client.describe_user_scram_credentials(["nobody"])["nobody"].result(timeout=10)


def test_requests_before_authentication_close_the_connection(secure_broker: SecureBroker) -> None:
    # A PLAINTEXT client talking to a SASL listener: Kafka drops it (no SaslHandshake came first).
    client = AdminClient({"bootstrap.servers": secure_broker.bootstrap("SASL_PLAINTEXT"), "log_level": 0})
    with pytest.raises(KafkaException):
        client.list_topics(timeout=3)
    if ours_only(secure_broker):
        assert "before authenticating" in secure_broker.log_text()


@pytest.mark.skipif(not os.environ.get("LAKEFEED_SECURITY_JAVA"), reason="Kafka's Java tools take ~10 s a run;"
                    " LAKEFEED_SECURITY_JAVA=1 runs them (docs/development.md)")
def test_kafka_configs_adds_a_scram_user(secure_broker: SecureBroker, tmp_path: Any) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
        f' username="admin" password="{ADMIN_PASSWORD}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secure_broker.ca.ca_file}\n")
    user = f"j-{uuid.uuid4().hex[:6]}"
    common = ("--bootstrap-server", secure_broker.bootstrap("SASL_SSL"), "--command-config", str(properties))
    result = run_kafka_tool("kafka-configs", *common, "--alter", "--add-config",
                            "SCRAM-SHA-256=[iterations=8192,password=java-secret]", "--entity-type", "users",
                            "--entity-name", user, timeout=90)
    assert result.returncode == 0, result.stderr[-2000:]
    # (kafka-configs --describe of users also asks for client quotas, which this broker does not serve.)
    client = admin(secure_broker)
    described = client.describe_user_scram_credentials([user])[user].result(timeout=10)
    assert [(i.mechanism.name, i.iterations) for i in described.scram_credential_infos] == [("SCRAM_SHA_256", 8192)]
    good = AdminClient(sasl_config(secure_broker, "SASL_SSL", "SCRAM-SHA-256", user, "java-secret"))
    assert good.list_topics(timeout=10).brokers
    # The Java client's own SCRAM login (ScramSaslClient) with the new user.
    scram = tmp_path / "scram.properties"
    scram.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
        f' username="{user}" password="java-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secure_broker.ca.ca_file}\n")
    listed = run_kafka_tool("kafka-topics", "--bootstrap-server", secure_broker.bootstrap("SASL_SSL"),
                            "--command-config", str(scram), "--list", timeout=90)
    assert listed.returncode == 0, listed.stderr[-2000:]


def read_response(sock: socket.socket, key: int, version: int) -> Any:
    cls = response_class(key, version)
    offset = 4 if cls.__header_schema__.__flexible__ is False else 5  # correlation id, tagged fields
    return entity_reader(cls)(read_frame(sock), offset)[0]


def raw_plain_login(broker: SecureBroker, user: str, password: str) -> socket.socket:
    """A socket after SaslHandshake v0 (PLAIN) and the raw token; the caller reads the broker's answer."""
    from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest

    sock = socket.create_connection(("127.0.0.1", broker.ports["SASL_PLAINTEXT"]), timeout=5)
    sock.sendall(frame(17, 0, SaslHandshakeRequest(mechanism="PLAIN")))
    assert read_response(sock, 17, 0).error_code == 0
    token = f"\0{user}\0{password}".encode()
    sock.sendall(len(token).to_bytes(4, "big") + token)
    return sock


def test_sasl_handshake_v0_then_raw_tokens(secure_broker: SecureBroker) -> None:
    """Kafka's older sequence: SaslHandshake v0, then the SASL tokens as bare size-prefixed frames; a wrong
    password closes the connection (a raw token cannot carry an error code)."""
    from kio.schema.metadata.v12.request import MetadataRequest

    def login(password: str) -> socket.socket:
        return raw_plain_login(secure_broker, "admin", password)

    with login(ADMIN_PASSWORD) as sock:
        assert sock.recv(4) == b"\0\0\0\0"  # an empty server token: logged in
        sock.sendall(frame(3, 12, MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=False), correlation_id=2))
        assert read_response(sock, 3, 12).brokers[0].port == secure_broker.ports["SASL_PLAINTEXT"]
    with login("wrong") as sock:
        assert sock.recv(4) == b""  # closed
