"""Every config under examples/ goes through the loader that reads it in production: the changefeed's
YAML and sink-URI validation, the pipeline's config loader, the broker's config loader; the
single-node broker config also runs a real broker."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from broker.config import BrokerConfig, load_file
from broker.config_catalog import TOPIC_CONFIGS
from broker.config_checks import validate_topic_config
from changefeed.config import load_config as load_changefeed_config
from changefeed.model import TableName
from lakefeed_testing.kafka_reference import run_kafka_tool
from lakefeed_testing.net import free_port, free_port_block, port_open, wait_until
from sink.uri import parse_sink_uri
from spark_pipelines.config import load_config as load_pipeline_config
from tests.config_options import PENDING_CLUSTER_PROPERTIES, broker_properties

EXAMPLES = Path(__file__).parents[2] / "examples"
CHANGEFEEDS = sorted(p for p in (EXAMPLES / "changefeeds").glob("*.yaml") if p.name != "sink-uris.yaml")
PIPELINES = sorted((EXAMPLES / "pipelines").glob("*.yaml"))
BROKERS = sorted((EXAMPLES / "brokers").iterdir())
_SINK_URI_LINE = re.compile(r"^# Sink URI: (\S+)", re.MULTILINE)


def test_every_example_kind_is_there() -> None:
    assert {p.stem for p in CHANGEFEEDS} >= {"quickstart", "dispatch-rules", "filters",
                                              "large-messages-handle-key-only", "large-messages-claim-check"}
    assert {p.stem for p in PIPELINES} >= {"scd1", "scd2", "catalog-target"}
    assert len(BROKERS) == 5


@pytest.mark.parametrize("path", CHANGEFEEDS, ids=lambda p: p.stem)
def test_changefeed_config_is_valid_with_its_sink_uri(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    config = load_changefeed_config(text)
    config.change_filter()  # compiles the table and event filters
    match = _SINK_URI_LINE.search(text)
    assert match, f"{path.name} names no '# Sink URI:' to use it with"
    sink = parse_sink_uri(match.group(1))
    # The pipeline needs the commit timestamps of the TiDB extension (docs/spark-pipelines.md).
    assert config.sink.enable_tidb_extension or sink.enable_tidb_extension or path.stem == "filters"


def test_changefeed_examples_say_what_they_show() -> None:
    dispatch = load_changefeed_config((EXAMPLES / "changefeeds" / "dispatch-rules.yaml").read_text())
    assert [rule.partition for rule in dispatch.sink.dispatchers] == ["index-value", "columns", "table"]
    assert dispatch.sink.dispatchers[1].columns == ("customer_id",)
    filters = load_changefeed_config((EXAMPLES / "changefeeds" / "filters.yaml").read_text()).change_filter()
    assert filters.keeps_table(TableName("shop", "orders"))
    assert not filters.keeps_table(TableName("shop", "tmp_import"))
    policies = {p.stem: load_changefeed_config(p.read_text()).sink.large_message_handle for p in CHANGEFEEDS}
    assert policies["large-messages-handle-key-only"] == "handle-key-only"
    assert policies["large-messages-claim-check"] == "claim-check"


def test_sink_uris_parse() -> None:
    uris = yaml.safe_load((EXAMPLES / "changefeeds" / "sink-uris.yaml").read_text())
    parsed = {name: parse_sink_uri(uri) for name, uri in uris.items()}
    durable = parsed["kafka-cluster-durable"]
    assert (durable.replication_factor, durable.required_acks, len(durable.bootstrap_servers)) == (3, -1, 3)
    assert parsed["tls-and-sasl"].client_config()["security.protocol"] == "SASL_SSL"
    assert parsed["large-rows-claim-check"].large_message_handle == "claim-check"
    assert parsed["existing-topic-no-auto-create"].auto_create_topic is False


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.stem)
def test_pipeline_config_loads(path: Path) -> None:
    config = load_pipeline_config(path)
    assert config.scd_type == (2 if path.stem == "scd2" else 1)
    if path.stem == "renamed-targets":
        assert config.table_path("shop", "acct") == "/var/lib/lakefeed/delta/crm/accounts"
    if path.stem == "catalog-target":
        assert config.target_path is None and config.catalog_target is not None
        assert config.target_name("shop", "orders") == ("lake", "orders")
        assert config.target_name("shop", "audit_log") == ("ops", "audit_log")


@pytest.mark.parametrize("path", BROKERS, ids=lambda p: p.name)
def test_broker_config_loads(path: Path) -> None:
    properties = load_file(path)
    unknown = set(properties) - broker_properties() - PENDING_CLUSTER_PROPERTIES
    assert not unknown, f"{path.name}: properties the broker does not know: {sorted(unknown)}"
    config = BrokerConfig().with_overrides(properties)
    assert config.listener.port > 0 and config.data_dir and config.node_id >= 1
    for definition in TOPIC_CONFIGS.values():  # a broker default of a topic config must be a valid value
        for prop, multiplier in definition.synonyms:
            if prop in properties:
                value = properties[prop]
                if multiplier != 1:
                    value = str(int(value) * multiplier)
                validate_topic_config(definition.name, value)
    for key in ("num.partitions", "default.replication.factor", "min.insync.replicas", "message.max.bytes"):
        config.int(key)


def test_cluster_nodes_agree() -> None:
    nodes = [load_file(EXAMPLES / "brokers" / f"cluster-node-{n}.properties") for n in (1, 2, 3)]
    assert [n["node.id"] for n in nodes] == ["1", "2", "3"]
    assert len({n["listeners"] for n in nodes}) == 3 and len({n["log.dirs"] for n in nodes}) == 3
    assert len({n["controller.quorum.voters"] for n in nodes}) == 1
    assert all(int(n["min.insync.replicas"]) < int(n["default.replication.factor"]) for n in nodes)


@pytest.mark.integration  # our broker and Kafka's kafka-configs
def test_single_node_config_runs_a_broker(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "broker.cli", "start", "--config",
               str(EXAMPLES / "brokers" / "single-node.properties"), "--data-dir", str(tmp_path / "data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
    with (tmp_path / "broker.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: process.poll() is None)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        resource = ConfigResource(ConfigResource.Type.BROKER, "1")
        configs = admin.describe_configs([resource])[resource].result(10)
        for name in ("auto.create.topics.enable", "num.partitions", "message.max.bytes"):
            assert configs[name].source == ConfigSource.STATIC_BROKER_CONFIG.value, name
        assert configs["auto.create.topics.enable"].value == "false"
        # auto.create.topics.enable=false: producing to a missing topic creates nothing.
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "message.timeout.ms": 2000})
        producer.produce("no-such-topic", b"x")
        producer.flush(5)
        assert "no-such-topic" not in admin.list_topics(timeout=10).topics
        # The runbook's check (docs/runbooks/topic-auto-creation.md), with Kafka's own tool.
        result = run_kafka_tool("kafka-configs", "--bootstrap-server", f"127.0.0.1:{port}", "--describe",
                                "--entity-type", "brokers", "--entity-name", "1", "--all", timeout=90)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "auto.create.topics.enable=false" in result.stdout
        assert "STATIC_BROKER_CONFIG:auto.create.topics.enable=false" in result.stdout
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_cluster_node_configs_form_one_cluster(tmp_path: Path) -> None:
    """The three cluster-node files, as written, except ports and data dirs (free ones here, so CI never
    collides): one cluster, RF 3 topics with full ISRs, acks=all writes read back from every node."""
    base = free_port_block(6)
    ports = {n: base + n - 1 for n in (1, 2, 3)}
    voters = ",".join(f"{n}@127.0.0.1:{base + 2 + n}" for n in (1, 2, 3))
    processes = []
    try:
        for n in (1, 2, 3):
            config = EXAMPLES / "brokers" / f"cluster-node-{n}.properties"
            command = [sys.executable, "-m", "broker.cli", "start", "--config", str(config),
                       "--data-dir", str(tmp_path / f"n{n}"), "--listeners", f"PLAINTEXT://127.0.0.1:{ports[n]}",
                       "--set", f"controller.quorum.voters={voters}"]
            with (tmp_path / f"node-{n}.log").open("wb") as log:
                processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
        for n, process in zip((1, 2, 3), processes, strict=True):
            wait_until(lambda n=n: port_open(ports[n]), timeout=60, what=f"cluster node {n}",
                       alive=lambda process=process: process.poll() is None)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]
        admin.create_topics([NewTopic("orders")])["orders"].result(30)  # the files' defaults: 3 partitions, RF 3
        topic = admin.list_topics("orders", timeout=10).topics["orders"]
        assert len(topic.partitions) == 3
        assert all(sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3] for p in topic.partitions.values())
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(30):
            producer.produce("orders", str(i).encode(), key=str(i).encode())
        assert producer.flush(30) == 0
        for n in (1, 2, 3):  # every node answers the same metadata and serves the data
            consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{ports[n]}", "group.id": f"g{n}",
                                 "auto.offset.reset": "earliest"})
            consumer.subscribe(["orders"])
            got: set[bytes] = set()
            deadline = time.monotonic() + 30
            while len(got) < 30 and time.monotonic() < deadline:
                got |= {m.value() for m in consumer.consume(100, 1.0) if m.error() is None}
            consumer.close()
            assert got == {str(i).encode() for i in range(30)}, n
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=20)
