"""The compose deployment's security (TLS and SCRAM between every part), checked without a Docker engine: the
files say what the issue asks, and the same broker properties, PKI job and setup job work on three real broker
processes. What only Docker can show (volumes, service names resolving, the images' users) is not run here."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from broker.config import load_file
from lakefeed_testing.own_cluster import own_cluster
from sink.errors import SinkError
from sink.kafka import KafkaSink, prepare_topic
from sink.message import Message, MessageBatch
from sink.uri import parse_sink_uri
from spark_pipelines.config import load_config
from tests.docker.test_docker_files import DOCKER, _compose, broker_settings

# Set by dev-cluster for local processes (compose names them for its hosts).
LOCAL = ("process.roles", "controller.quorum.voters", "listeners")


def _header() -> str:
    return (DOCKER / "compose.yaml").read_text().split("services:")[0]


def _sink_uri() -> str:
    match = re.search(r'--sink-uri "([^"]+)"', _header())
    assert match, "the header shows no `changefeed create --sink-uri`"
    return match.group(1)


def test_every_listener_is_tls_and_every_client_authenticates() -> None:
    for name in ("broker-1", "broker-2", "broker-3"):
        settings = broker_settings(name)
        protocols = dict(p.split(":") for p in settings["listener.security.protocol.map"].split(","))
        listeners = [entry.split("://")[0] for entry in settings["listeners"].split(",")]
        assert {protocols[listener] for listener in listeners} <= {"SSL", "SASL_SSL"}, name
        assert protocols["CLIENT"] == "SASL_SSL" and settings["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
        for listener in (settings["inter.broker.listener.name"], settings["controller.listener.names"]):
            assert protocols[listener] == "SSL"
            assert settings[f"listener.name.{listener.lower()}.ssl.client.auth"] == "required", listener
        assert settings["authorizer.class.name"].endswith("StandardAuthorizer")
        assert settings["allow.everyone.if.no.acl.found"] == "false"
        assert settings["ssl.keystore.location"] == f"/pki/{name}-keystore.pem"
        assert f"User:CN={name},O=lakefeed" in settings["super.users"].split(";")
    services = _compose()["services"]
    pki = services["pki"]["entrypoint"]
    issued = {pki[i + 1].split(",")[0] for i, word in enumerate(pki) if word in ("--server", "--client")}
    assert {"broker-1", "broker-2", "broker-3", "changefeed", "admin"} <= issued
    server = " ".join(services["changefeed"]["entrypoint"])
    assert "--tls-cert /pki/changefeed.crt" in server and "LAKEFEED_API_TOKEN=" in server
    assert "--auth-token" not in server  # a token on the command line is in every process list
    assert services["pipeline"]["entrypoint"][-1] == "/secrets/pipeline.yaml"
    assert "sasl-password-file=/secrets/changefeed.password" in _sink_uri()
    assert "sasl-user=changefeed" in _sink_uri() and "ca=/pki/ca.pem" in _sink_uri()
    assert "tls=true" in _header()  # MySQL over TLS


def test_the_compose_entrypoints_take_the_options_they_are_given() -> None:
    services = _compose()["services"]
    commands = {
        "broker": (["-m", "broker.cli", "start"], services["broker-1"]["entrypoint"]),
        "pki": (["-m", "lakefeed_common.pki"], services["pki"]["entrypoint"]),
        "setup": ([str(DOCKER / "secure_setup.py")], services["setup"]["entrypoint"]),
        "changefeed": (["-m", "changefeed.cli", "server"], services["changefeed"]["entrypoint"][-1].split()),
    }
    for name, (program, used) in commands.items():
        answer = subprocess.run([sys.executable, *program, "--help"], capture_output=True, text=True, timeout=60)
        assert answer.returncode == 0, (name, answer.stderr)
        for option in (word for word in used if word.startswith("--")):
            assert option in answer.stdout, f"{name}: {option} is not an option of {' '.join(program)}"


@pytest.mark.integration
def test_the_compose_security_works_on_three_real_brokers(tmp_path: Path) -> None:
    pki, secrets = tmp_path / "pki", tmp_path / "secrets"
    # The pki job's command, with local names in the broker certificate (compose resolves broker-N itself).
    made = subprocess.run([sys.executable, "-m", "lakefeed_common.pki", str(pki), "--server",
                           "broker-1,localhost,127.0.0.1", "--client", "admin"], capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    settings = {k: v for k, v in load_file(DOCKER / "broker.properties").items() if k not in LOCAL}
    # Every local node presents broker-1's certificate (one key store for the three processes).
    settings.update({"ssl.keystore.location": str(pki / "broker-1-keystore.pem"),
                     "ssl.truststore.location": str(pki / "ca.pem"), "offsets.topic.num.partitions": "3"})
    admin_tls = {"security.protocol": "SSL", "ssl.ca.location": str(pki / "ca.pem"),
                 "ssl.certificate.location": str(pki / "admin.crt"), "ssl.key.location": str(pki / "admin.key")}
    with own_cluster(tmp_path / "cluster", 3, settings, listener_names=("INTERNAL", "CLIENT"),
                     client=admin_tls) as cluster:
        internal = ",".join(f"127.0.0.1:{cluster.listener_port('INTERNAL', n)}" for n in cluster.node_ids)
        client = ",".join(f"127.0.0.1:{cluster.listener_port('CLIENT', n)}" for n in cluster.node_ids)
        setup = subprocess.run(
            [sys.executable, str(DOCKER / "secure_setup.py"), "--bootstrap", internal, "--client-bootstrap", client,
             "--pki", str(pki), "--secrets", str(secrets), "--pipeline-config", str(DOCKER / "pipeline.yaml"),
             "--topic-prefix", "shop", "--timeout", "60"], capture_output=True, text=True, timeout=180)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        for name in ("changefeed.password", "pipeline.password", "api-token", "pipeline.yaml"):
            assert stat.S_IMODE((secrets / name).stat().st_mode) == 0o600, name

        # The changefeed's sink, with the compose header's URI: SASL_SSL as `changefeed`, topic `shop` created.
        uri = _sink_uri().replace("broker-1:9092,broker-2:9092,broker-3:9092", client)
        uri = uri.replace("/pki/ca.pem", quote(str(pki / "ca.pem"))).replace(
            "/secrets/changefeed.password", quote(str(secrets / "changefeed.password")))
        sink_config = parse_sink_uri(uri)
        assert sink_config.client_config()["security.protocol"] == "SASL_SSL"
        info = prepare_topic(sink_config)
        sink = KafkaSink(sink_config, message_limit=info.max_message_bytes, memory_quota=1 << 20)
        results: list[SinkError | None] = []
        lock = threading.Lock()

        def ack(error: SinkError | None) -> None:
            with lock:
                results.append(error)

        sink.send_batch(MessageBatch.of([Message("shop", 0, f"k{i}".encode(), f"v{i}".encode())
                                         for i in range(5)]), ack)
        assert sink.flush(30) == 0
        sink.close()
        assert results == [None]

        # The pipeline's config as `setup` wrote it loads, and its login reads the topic and nothing more.
        pipeline = load_config(secrets / "pipeline.yaml")
        options = dict(pipeline.source.options)
        assert pipeline.source.bootstrap_servers == client and options["kafka.security.protocol"] == "SASL_SSL"
        password = (secrets / "pipeline.password").read_text().strip()
        assert f'password="{password}"' in options["kafka.sasl.jaas.config"]
        login = {"bootstrap.servers": client, "security.protocol": "SASL_SSL", "ssl.ca.location": str(pki / "ca.pem"),
                 "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "pipeline", "sasl.password": password}
        assert [v for _, v in _read(login, "shop")] == [f"v{i}".encode() for i in range(5)]
        producer = Producer({**login, "message.timeout.ms": 8000, "retries": 0})
        refused: list[object] = []
        producer.produce("shop", b"x", on_delivery=lambda err, _m: refused.append(err))
        producer.flush(15)
        assert refused and refused[0] is not None and "AUTHORIZATION" in str(refused[0]).upper()
        for wrong in ({**login, "sasl.password": "wrong"}, {**login, "security.protocol": "SSL"}):
            with pytest.raises(KafkaException):
                AdminClient({**wrong, "socket.timeout.ms": 3000, "log_level": 0}).list_topics(timeout=4)

        # Run again (a restarted job): the same passwords, nothing broken.
        again = subprocess.run(setup.args, capture_output=True, text=True, timeout=180)
        assert again.returncode == 0, again.stderr
        assert (secrets / "pipeline.password").read_text().strip() == password
    assert yaml.safe_load((secrets / "pipeline.yaml").read_text())["target"]["path"] == "/data/delta"


def _read(settings: dict[str, str], topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of partition 0, read with assign() (as Spark's Kafka source reads: no group membership)."""
    consumer = Consumer({**settings, "group.id": "unused", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        records: list[tuple[bytes | None, bytes | None]] = []
        for _ in range(30):
            message = consumer.poll(1)
            if message is None:
                if records:
                    break
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                continue  # librdkafka looks up a coordinator for any group.id; the pipeline has no group ACL
            assert error is None, error
            records.append((message.key(), message.value()))
        return records
    finally:
        consumer.close()
