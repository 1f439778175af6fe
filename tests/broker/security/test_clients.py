"""The changefeed's sink and kcat against the secured broker: the sink over SASL_SSL with SCRAM and the ACLs a
changefeed user needs (prefixed topics, CREATE and DESCRIBE_CONFIGS on the cluster); kcat over SASL_SSL with
PLAIN, and a denied topic."""

from __future__ import annotations

import subprocess
import threading
import uuid
from pathlib import Path
from urllib.parse import quote

from confluent_kafka.admin import AclOperation, ResourcePatternType, ResourceType

from lakefeed_testing.secure_broker import SecureBroker, acl, add_scram_user, grant
from sink.errors import SinkError
from sink.kafka import KafkaSink, prepare_topic
from sink.message import Message, MessageBatch
from sink.uri import parse_sink_uri


def test_sink_delivers_over_sasl_ssl_with_scram(secure_broker: SecureBroker, tmp_path: Path) -> None:
    user, prefix = f"cdc-{uuid.uuid4().hex[:6]}", f"cdc-{uuid.uuid4().hex[:6]}."
    add_scram_user(secure_broker, user, "cdc-pw", "SCRAM-SHA-512")
    principal = f"User:{user}"
    grant(secure_broker,
          acl(principal, ResourceType.TOPIC, prefix, AclOperation.ALL, pattern=ResourcePatternType.PREFIXED),
          acl(principal, ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE),
          acl(principal, ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS))
    topic = prefix + "shop"
    secret = tmp_path / "sasl-password"  # the password stays out of the URI the server stores
    secret.write_text("cdc-pw\n")
    config = parse_sink_uri(
        f"kafka://{secure_broker.bootstrap('SASL_SSL')}/{topic}?partition-num=2&ca={quote(str(secure_broker.ca.ca_file))}"
        f"&sasl-user={user}&sasl-password-file={quote(str(secret))}&sasl-mechanism=SCRAM-SHA-512")
    info = prepare_topic(config)
    sink = KafkaSink(config, message_limit=info.max_message_bytes, memory_quota=1 << 20)
    results: list[SinkError | None] = []
    lock = threading.Lock()

    def ack(error: SinkError | None) -> None:
        with lock:
            results.append(error)

    for first in (0, 10):  # two batches of ten, one acknowledgement each
        sink.send_batch(MessageBatch.of([Message(topic, i % 2, f"k{i}".encode(), f"v{i}".encode())
                                         for i in range(first, first + 10)]), ack)
    assert sink.flush(20) == 0
    sink.close()
    assert results == [None] * 2


def test_kcat_over_sasl_ssl(secure_broker: SecureBroker) -> None:
    # PLAIN: Debian 12's kcat (librdkafka 2.0) repeats its nonce in the SCRAM final message, which Apache
    # Kafka 4 and this broker both refuse (RFC 5802).
    user = "plainuser"
    topic = f"kc-{uuid.uuid4().hex[:6]}"
    grant(secure_broker, acl(f"User:{user}", ResourceType.TOPIC, topic, AclOperation.ALL),
          acl(f"User:{user}", ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE))
    common = ["kcat", "-b", secure_broker.bootstrap("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
              "-X", "sasl.mechanisms=PLAIN", "-X", f"sasl.username={user}", "-X", "sasl.password=plain-secret",
              "-X", f"ssl.ca.location={secure_broker.ca.ca_file}", "-X", "log_level=0"]
    produced = subprocess.run([*common, "-P", "-t", topic], input="a\nb\n", capture_output=True, text=True,
                              timeout=30)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([*common, "-C", "-t", topic, "-o", "beginning", "-e", "-q"], capture_output=True,
                              text=True, timeout=30)
    assert consumed.stdout.split() == ["a", "b"], consumed.stderr
    denied = subprocess.run([*common, "-P", "-t", "not-" + topic], input="x\n", capture_output=True, text=True,
                            timeout=30)
    assert "Broker: Topic authorization failed" in denied.stderr
