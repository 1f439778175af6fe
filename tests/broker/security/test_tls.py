"""TLS listeners over TCP: the handshake with confluent-kafka, kafka-python and Python's ssl module, per-listener
advertised addresses, and refused TLS configurations (one line, before anything starts)."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer  # type: ignore[import-untyped]

from broker.config import ConfigError
from broker.config_checks import check_broker_properties
from lakefeed_testing.secure_broker import SecureBroker
from lakefeed_testing.tls import TestCA


def _tls_client(broker: SecureBroker) -> dict[str, str]:
    return {"bootstrap.servers": broker.bootstrap("SSL"), "security.protocol": "SSL",
            "ssl.ca.location": str(broker.ca.ca_file), "ssl.certificate.location": str(broker.tls_admin.certificate),
            "ssl.key.location": str(broker.tls_admin.key)}


def test_tls_handshake_and_the_broker_certificate(secure_broker: SecureBroker) -> None:
    context = ssl.create_default_context(cafile=str(secure_broker.ca.ca_file))
    with socket.create_connection(("127.0.0.1", secure_broker.ports["SSL"]), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
        subject = dict(item[0] for item in tls.getpeercert()["subject"])
        assert subject["commonName"] == "broker"
    untrusting = ssl.create_default_context(cafile=str(TestCA(secure_broker.ca.root / "other").ca_file))
    with socket.create_connection(("127.0.0.1", secure_broker.ports["SSL"]), timeout=5) as raw, \
            pytest.raises(ssl.SSLCertVerificationError):
        untrusting.wrap_socket(raw, server_hostname="127.0.0.1")


def test_each_listener_advertises_its_own_port(secure_broker: SecureBroker) -> None:
    for name, config in (("PLAINTEXT", {"bootstrap.servers": secure_broker.bootstrap("PLAINTEXT")}),
                         ("SSL", _tls_client(secure_broker))):
        brokers = AdminClient(config).list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", secure_broker.ports[name])]


def test_produce_and_consume_over_tls_with_confluent_and_kafka_python(secure_broker: SecureBroker) -> None:
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    producer = Producer(_tls_client(secure_broker))
    for i in range(5):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**_tls_client(secure_broker), "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    for _ in range(40):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
        if len(values) == 5:
            break
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(5)]
    admin_cert = secure_broker.tls_admin
    reader = KafkaConsumer(topic, bootstrap_servers=secure_broker.bootstrap("SSL"), security_protocol="SSL",
                           ssl_cafile=str(secure_broker.ca.ca_file), ssl_certfile=str(admin_cert.certificate),
                           ssl_keyfile=str(admin_cert.key), auto_offset_reset="earliest", consumer_timeout_ms=8000)
    try:
        assert [m.value for m in reader][:5] == values
    finally:
        reader.close()


@pytest.mark.parametrize(("properties", "expected"), [
    ({"listeners": "SSL://127.0.0.1:1", "ssl.keystore.location": "/nonexistent.pem"},
     "cannot load the TLS key store of listener SSL from /nonexistent.pem"),
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type='JKS': expected one of PEM"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites: this TLS setting is not supported"),
    ({"listeners": "CLIENT://127.0.0.1:1"}, "CLIENT is not a security protocol and has no entry in"
     " listener.security.protocol.map"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms='GSSAPI': each item must be one of PLAIN"),
    ({"listener.name.sasl_ssl.plain.sasl.jaas.config": "user_a=b"}, "expected a JAAS entry like"),
    ({"controller.quorum.voters": "1@127.0.0.1:1", "listeners": "SASL_SSL://127.0.0.1:1"},
     "inter.broker.listener.name=SASL_SSL is SASL_SSL: brokers fetch from each other over PLAINTEXT or SSL only"),
    ({"controller.quorum.voters": "1@127.0.0.1:1", "controller.listener.names": "CONTROLLER",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"},
     "controller listener CONTROLLER is SASL_SSL: the controller quorum speaks PLAINTEXT or SSL"),
    ({"controller.quorum.voters": "1@127.0.0.1:1", "controller.listener.names": "CONTROLLER",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT", "listeners": "PLAINTEXT://127.0.0.1:2"},
     "controller.listener.names names CONTROLLER, which has no entry in listener.security.protocol.map"),
    ({"controller.quorum.voters": "1@127.0.0.1:1", "controller.listener.names": "CONTROLLER",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
      "listeners": "PLAINTEXT://127.0.0.1:2,CONTROLLER://127.0.0.1:3"},
     "listener CONTROLLER://127.0.0.1:3 is the controller listener but controller.quorum.voters gives node 1"),
    ({"listeners": "PLAINTEXT://127.0.0.1:2", "inter.broker.listener.name": "INTERNAL"},
     "inter.broker.listener.name=INTERNAL is not one of the listeners (PLAINTEXT)"),
    ({"controller.quorum.voters": "1@127.0.0.1:1", "listeners": "SSL://127.0.0.1:2",
      "ssl.keystore.location": "KEYSTORE"},
     "listener SSL is how brokers reach each other over TLS but has no trust store: set ssl.truststore.location"),
    ({"security.inter.broker.protocol": "SSL"}, "name the listener with inter.broker.listener.name instead"),
], ids=["missing-file", "jks", "cipher-suites", "unmapped-name", "gssapi", "jaas", "cluster-inter-broker-sasl",
        "controller-sasl", "controller-unmapped", "controller-address", "inter-broker-unknown",
        "inter-broker-no-truststore", "security-inter-broker-protocol"])
def test_bad_security_settings_are_refused(properties: dict[str, str], expected: str, tmp_path: Path) -> None:
    if properties.get("ssl.keystore.location") == "KEYSTORE":  # a key store that loads: the trust store is missing
        properties = {**properties, "ssl.keystore.location": str(TestCA(tmp_path).issue("b", server=True).keystore)}
    with pytest.raises(ConfigError, match=re.escape(expected)):
        check_broker_properties(properties)


def test_a_tls_listener_without_key_store_stops_the_broker_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "broker.cli", "start", "--data-dir", str(tmp_path / "data"),
                             "--listeners", "SSL://127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "listener SSL uses TLS but has no key store: set ssl.keystore.location" in lines[0]
    assert not (tmp_path / "data").exists()
