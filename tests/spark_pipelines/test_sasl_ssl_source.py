"""The pipeline reads canal-JSON over a SASL_SSL listener with SCRAM-SHA-512, configured through `source.options`
only, as a user with the least privilege of docs/runbooks/secure-deployment.md (READ on its topics, nothing
else). A wrong password and a missing topic ACL stop `spark-pipeline run` within seconds with the error Kafka's
client names (SaslAuthenticationException, TopicAuthorizationException with the topic) and how to fix it. Runs
against Apache Kafka 4.3 configured the same way with LAKEFEED_SECURITY_IMPL=kafka (the broker security tests'
switch)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from confluent_kafka import Producer
from confluent_kafka.admin import AclOperation, NewTopic, ResourcePatternType, ResourceType

from lakefeed_testing.secure_broker import (
    ADMIN_PASSWORD,
    SecureBroker,
    acl,
    add_scram_user,
    admin,
    grant,
    sasl_config,
)
from spark_pipelines.cli import main as pipeline_cli
from spark_pipelines.io.delta import live_rows
from tests.spark_pipelines.canal import dml

ES = 1_700_000_000_000
PASSWORD = "pipeline-pw"
# A failed login or a denied topic must stop the run, not hang it; Spark's Kafka source gives up after
# fetchOffset.numRetries (3) attempts, each bounded by the client's own timeouts.
FAILURE_BOUND_S = 90


@pytest.fixture(scope="module")
def shop(secure_broker: SecureBroker) -> str:
    """A topic of canal-JSON changes of shop.acct, written by the super user: 4 inserts, an update, a delete."""
    topic = f"shop-{uuid.uuid4().hex[:6]}"
    client = admin(secure_broker)
    client.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(timeout=30)
    producer = Producer({**sasl_config(secure_broker, "SASL_SSL", "PLAIN", "admin", ADMIN_PASSWORD), "acks": "all"})
    changes = [dml("acct", "INSERT", {"id": str(i), "owner": f"o{i}"}, es=ES + i) for i in range(1, 5)]
    changes.append(dml("acct", "UPDATE", {"id": "2", "owner": "new"}, old={"id": "2", "owner": "o2"}, es=ES + 5))
    changes.append(dml("acct", "DELETE", {"id": "3", "owner": "o3"}, es=ES + 6))
    for value in changes:
        producer.produce(topic, value=value.encode(), key=b"acct")  # one key: one partition, commit order
    assert producer.flush(30) == 0
    return topic


def _pipeline_user(broker: SecureBroker, *, topic_acl: bool) -> str:
    """A SCRAM-SHA-512 user with the least privilege the pipeline needs: READ on the `shop-*` topics (which
    implies DESCRIBE in Kafka's authorizer), or no ACL at all. No group ACL: Spark's Kafka source fetches
    offsets with an AdminClient and reads with assign(), so it never joins or commits to a group."""
    user = f"pipeline-{uuid.uuid4().hex[:6]}"
    add_scram_user(broker, user, PASSWORD, "SCRAM-SHA-512")
    if topic_acl:
        grant(broker, acl(f"User:{user}", ResourceType.TOPIC, "shop-", AclOperation.READ,
                          pattern=ResourcePatternType.PREFIXED))
    return user


def _run(broker: SecureBroker, topic: str, user: str, password: str, root: Path) -> tuple[Result, float]:
    """`spark-pipeline run --once` in-process (on the shared session) with the runbook's `source.options`."""
    config = root / "pipeline.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": broker.bootstrap("SASL_SSL"), "topics": [topic], "options": {
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                      f'username="{user}" password="{password}";',
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(broker.ca.ca_file),
        }},
        "target": {"path": str(root / "delta")},
        "checkpoint": str(root / "checkpoint"),
    }), encoding="utf-8")
    started = time.monotonic()
    result = CliRunner().invoke(pipeline_cli, ["run", "--config", str(config), "--once"])
    return result, time.monotonic() - started


def _error_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_reads_over_sasl_ssl_with_least_privilege(secure_broker: SecureBroker, shop: str, spark: Any,
                                                  tmp_path: Path) -> None:
    user = _pipeline_user(secure_broker, topic_acl=True)
    result, _ = _run(secure_broker, shop, user, PASSWORD, tmp_path)
    assert result.exit_code == 0, result.stderr
    rows = live_rows(spark, str(tmp_path / "delta" / "shop" / "acct")).select("id", "owner").collect()
    assert sorted(tuple(row) for row in rows) == [(1, "o1"), (2, "new"), (4, "o4")]


def test_wrong_password_stops_the_run_naming_the_authentication_failure(
        secure_broker: SecureBroker, shop: str, spark: Any, tmp_path: Path) -> None:
    user = _pipeline_user(secure_broker, topic_acl=True)
    result, took = _run(secure_broker, shop, user, "wrong-pw", tmp_path)
    assert result.exit_code == 1, result.stderr
    assert took < FAILURE_BOUND_S
    errors = _error_lines(result)
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("error: the pipeline stopped: org.apache.kafka.common.errors."
                                "SaslAuthenticationException: Authentication failed"), errors[0]
    assert errors[0].endswith("invalid credentials with SASL mechanism SCRAM-SHA-512; check the user and "
                              "password of source.options kafka.sasl.jaas.config and kafka.sasl.mechanism "
                              "against the broker's SCRAM users"), errors[0]
    assert "wrong-pw" not in result.stderr


def test_missing_topic_acl_stops_the_run_naming_the_topic(secure_broker: SecureBroker, shop: str, spark: Any,
                                                         tmp_path: Path) -> None:
    user = _pipeline_user(secure_broker, topic_acl=False)
    result, took = _run(secure_broker, shop, user, PASSWORD, tmp_path)
    assert result.exit_code == 1, result.stderr
    assert took < FAILURE_BOUND_S
    errors = _error_lines(result)
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("error: the pipeline stopped: org.apache.kafka.common.errors."
                                "TopicAuthorizationException: "), errors[0]
    assert errors[0].endswith(f"; grant the pipeline's user READ on topic {shop} "
                              "(docs/runbooks/secure-deployment.md)"), errors[0]
