"""One secured broker for security tests: PLAINTEXT, SSL (client certificates requested), SASL_PLAINTEXT and
SASL_SSL listeners, PLAIN users from the JAAS config, SCRAM users added through AlterUserScramCredentials, ACLs
on (StandardAuthorizer), `User:admin` and the `tls-admin` certificate super users.

`LAKEFEED_SECURITY_IMPL=kafka` starts Apache Kafka 4.3 configured the same way instead of our broker, so the
same client-side tests prove the settings against the reference (docs/development.md). The admin helpers
below log in as the PLAIN super user over SASL_SSL with confluent-kafka's AdminClient.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from lakefeed_testing.kafka_reference import kafka_reference
from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.processes import stop_process
from lakefeed_testing.tls import Pem, TestCA

ADMIN_PASSWORD = "admin-secret"
TLS_ADMIN = "User:CN=tls-admin,O=lakefeed-test"


@dataclass(frozen=True)
class SecureBroker:
    kind: str  # "ours", or "kafka": Apache Kafka 4.3 configured the same way (LAKEFEED_SECURITY_IMPL=kafka)
    ports: dict[str, int]
    ca: TestCA
    client: Pem  # a certificate whose principal has no ACLs
    tls_admin: Pem  # a certificate whose principal is a super user
    log_path: Path
    data_dir: Path

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def start_broker(root: Path, properties: dict[str, str]) -> subprocess.Popen[bytes]:
    config = root / "server.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(root / "data"), "--config", str(config)]
    with (root / "broker.log").open("ab") as log_file:
        return subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)


def ours_only(broker: SecureBroker) -> bool:
    """Whether a test may read our broker's log (Apache Kafka words its log lines differently)."""
    return broker.kind == "ours"


@contextlib.contextmanager
def secure_broker(root: Path) -> Iterator[SecureBroker]:
    """Our broker (or Apache Kafka with LAKEFEED_SECURITY_IMPL=kafka) with every listener kind, stopped after."""
    ca = TestCA(root / "pki")
    server = ca.issue("broker", server=True)
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    properties = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.ca_file),
        "listener.name.ssl.ssl.client.auth": "requested",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule"
        f' required user_admin="{ADMIN_PASSWORD}" user_plainuser="plain-secret";',
        "listener.name.sasl_ssl.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule"
        f' required user_admin="{ADMIN_PASSWORD}" user_plainuser="plain-secret";',
        # Kafka needs a JAAS entry per SASL mechanism and listener; ours accepts and ignores the SCRAM ones.
        **{f"listener.name.{listener}.{mechanism}.sasl.jaas.config":
           "org.apache.kafka.common.security.scram.ScramLoginModule required;"
           for listener in ("sasl_plaintext", "sasl_ssl") for mechanism in ("scram-sha-256", "scram-sha-512")},
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:admin;{TLS_ADMIN}",
        "group.initial.rebalance.delay.ms": "100",
        "offsets.topic.num.partitions": "3",
    }
    client, tls_admin = ca.issue("client", server=False), ca.issue("tls-admin", server=False)
    if os.environ.get("LAKEFEED_SECURITY_IMPL") == "kafka":
        # Kafka's broker reaches its own controller over PLAINTEXT as User:ANONYMOUS, which must be allowed.
        properties["super.users"] += ";User:ANONYMOUS"
        del ports["PLAINTEXT"]  # kafka_reference picks its own PLAINTEXT port
        with kafka_reference(properties, extra_listeners=ports) as kafka:
            ports["PLAINTEXT"] = kafka.port
            yield SecureBroker("kafka", ports, ca, client, tls_admin, kafka.data_dir.parent / "server.log",
                               kafka.data_dir)
        return
    properties["listeners"] = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    process = start_broker(root, properties)
    try:
        wait_until(lambda: all(port_open(p) for p in ports.values()), timeout=20, what="secured broker",
                   alive=lambda: process.poll() is None)
        yield SecureBroker("ours", ports, ca, client, tls_admin, root / "broker.log", root / "data")
    finally:
        stop_process(process)


def sasl_config(broker: SecureBroker, listener: str, mechanism: str, user: str, password: str) -> dict[str, Any]:
    """confluent-kafka settings that log in as `user` on `listener` (SASL_PLAINTEXT or SASL_SSL)."""
    config = {"bootstrap.servers": broker.bootstrap(listener), "security.protocol": listener,
              "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
    if listener == "SASL_SSL":
        config["ssl.ca.location"] = str(broker.ca.ca_file)
    return config


def admin(broker: SecureBroker) -> AdminClient:
    return AdminClient(sasl_config(broker, "SASL_SSL", "PLAIN", "admin", ADMIN_PASSWORD))


def add_scram_user(broker: SecureBroker, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> None:
    info = ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], 4096)
    client = admin(broker)  # kept referenced: a destroyed client fails its futures
    futures = client.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, password.encode())])
    for future in futures.values():
        future.result(timeout=20)


def acl(principal: str, kind: ResourceType, name: str, operation: AclOperation,
        permission: AclPermissionType = AclPermissionType.ALLOW,
        pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    """One ACL binding from any host ("*")."""
    return AclBinding(kind, name, pattern, principal, "*", operation, permission)


def grant(broker: SecureBroker, *bindings: AclBinding) -> None:
    client = admin(broker)
    for future in client.create_acls(list(bindings)).values():
        future.result(timeout=10)
