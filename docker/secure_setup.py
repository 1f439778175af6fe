"""The compose deployment's one-shot `setup` job: the SCRAM users and ACLs the changefeed and the pipeline log in
with, their passwords and the API token in files only the services read, and the pipeline's config with its
SASL_SSL source options.

No one can log in by SCRAM before a user exists, so this job authenticates with a client certificate on the
brokers' INTERNAL listener (mutual TLS; `CN=admin` is a super user), as the secure-deployment runbook says.
Run again, it keeps the passwords and re-applies users and ACLs (both idempotent in Kafka's APIs).

    python secure_setup.py --bootstrap broker-1:9091 --pki /pki --secrets /secrets \
        --pipeline-config /config/pipeline.yaml --client-bootstrap broker-1:9092 --topic-prefix shop
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import click
import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
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

from lakefeed_common.pki import give_to, write_private

MECHANISM = "SCRAM-SHA-512"
USERS = ("changefeed", "pipeline")


def password(directory: Path, name: str) -> str:
    """The secret in DIRECTORY/NAME, made (random, mode 0600) when missing."""
    path = directory / name
    if not path.exists():
        write_private(path, (secrets.token_urlsafe(24) + "\n").encode())
    return path.read_text().strip()


def acls(prefix: str) -> list[AclBinding]:
    """Least privilege: the changefeed creates and writes the `prefix*` topics (CREATE on the cluster for
    auto-created topics, DESCRIBE_CONFIGS for the topic checks it makes first); the pipeline reads them (READ
    implies DESCRIBE; Spark's Kafka source reads with assign() and never joins a group)."""

    def allow(user: str, kind: ResourceType, name: str, operation: AclOperation,
              pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
        return AclBinding(kind, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)

    topics = ResourcePatternType.PREFIXED
    return [
        *(allow("changefeed", ResourceType.TOPIC, prefix, op, topics)
          for op in (AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)),
        allow("changefeed", ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE),
        allow("changefeed", ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS),
        allow("pipeline", ResourceType.TOPIC, prefix, AclOperation.READ, topics),
    ]


def with_sasl_source(template: Path, bootstrap: str, ca_file: Path, pipeline_password: str) -> dict[str, Any]:
    """The pipeline's config: the template with the brokers' SASL_SSL listener and the pipeline user's login."""
    document = yaml.safe_load(template.read_text())
    source = document.setdefault("source", {})
    source["bootstrap_servers"] = bootstrap
    source["options"] = {
        **(source.get("options") or {}),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": MECHANISM,
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                  f'username="pipeline" password="{pipeline_password}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(ca_file),
    }
    return dict(document)


def wait_for_brokers(admin: AdminClient, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            brokers = admin.list_topics(timeout=5).brokers
            if brokers:
                click.echo(f"setup: {len(brokers)} brokers answer")
                return
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise click.ClickException(f"no broker answered on the INTERNAL listener in {timeout_s:.0f} s: "
                                           f"{exc}; check the brokers' logs and the pki volume") from exc
        click.echo("setup: waiting for the brokers")
        time.sleep(2)


@click.command()
@click.option("--bootstrap", required=True, help="the brokers' INTERNAL (mutual TLS) listeners")
@click.option("--client-bootstrap", required=True, help="the brokers' SASL_SSL listeners, for the pipeline")
@click.option("--pki", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="ca.pem and the admin client certificate (admin.crt, admin.key)")
@click.option("--secrets", "secrets_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="where the passwords, the API token and the pipeline config go")
@click.option("--pipeline-config", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="the pipeline config to add the SASL_SSL source options to")
@click.option("--topic-prefix", default="shop", show_default=True, help="the changefeed's topics")
@click.option("--owner", type=int, default=None, metavar="UID", help="give the written files to this user id")
@click.option("--timeout", type=float, default=180, show_default=True, help="seconds to wait for the brokers")
def main(bootstrap: str, client_bootstrap: str, pki: Path, secrets_dir: Path, pipeline_config: Path,
         topic_prefix: str, owner: int | None, timeout: float) -> None:
    """Create the changefeed's and the pipeline's SCRAM users and ACLs; write their secrets."""
    secrets_dir.mkdir(parents=True, exist_ok=True)
    passwords = {user: password(secrets_dir, f"{user}.password") for user in USERS}
    password(secrets_dir, "api-token")
    admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SSL",
                         "ssl.ca.location": str(pki / "ca.pem"), "ssl.certificate.location": str(pki / "admin.crt"),
                         "ssl.key.location": str(pki / "admin.key"), "socket.timeout.ms": 10000})
    wait_for_brokers(admin, timeout)
    upserts = [UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                            passwords[user].encode()) for user in USERS]
    for user, future in admin.alter_user_scram_credentials(upserts).items():
        future.result(30)
        click.echo(f"setup: SCRAM user {user} ({MECHANISM})")
    for binding, future in admin.create_acls(acls(topic_prefix)).items():
        future.result(30)
        click.echo(f"setup: ACL {binding.principal} {binding.operation} {binding.restype} {binding.name}")
    target = secrets_dir / "pipeline.yaml"
    text = yaml.safe_dump(with_sasl_source(pipeline_config, client_bootstrap, pki / "ca.pem", passwords["pipeline"]),
                          sort_keys=False)
    write_private(target, text.encode())
    if owner is not None:
        give_to(secrets_dir, owner)
    click.echo(f"setup: done; secrets in {secrets_dir}")


if __name__ == "__main__":
    main()
