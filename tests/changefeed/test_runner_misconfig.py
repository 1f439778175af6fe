"""Misconfigurations fail when a changefeed is created, with a message saying what to change, on the
bundled broker and on Apache Kafka alike."""

import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import KafkaReference
from lakefeed_testing.net import free_port
from lakefeed_testing.own_broker import SINK_LIMIT, OwnBroker
from sink.errors import SinkConfigError, SinkError, TopicError
from sink.kafka.admin import BATCH_OVERHEAD


@pytest.fixture(params=["own", "kafka"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "own":
        own: OwnBroker = request.getfixturevalue("own_broker")
        return own.bootstrap
    kafka: KafkaReference = request.getfixturevalue("kafka")
    return kafka.bootstrap_servers


def _feed(settings: ConnectionSettings, uri: str) -> Changefeed:
    return Changefeed(ChangefeedSpec(f"bad-{uuid.uuid4().hex[:6]}", settings, uri))


def _topic() -> str:
    return f"cfg-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("http://127.0.0.1:9092/t", "scheme must be kafka://"),
        ("kafka://127.0.0.1:9092/", "names no topic"),
        ("kafka://127.0.0.1/t", "is not host:port"),
        ("kafka://127.0.0.1:9092/t?partition-nums=3", "'partition-nums' is unknown"),
        ("kafka://127.0.0.1:9092/t?max-message-bytes=10", "max-message-bytes"),
        ("kafka://127.0.0.1:9092/t?required-acks=2", "required-acks"),
        ("kafka://127.0.0.1:9092/t?large-message-handle-option=claim-check", "needs claim-check-storage-uri"),
    ],
)
def test_bad_uris_fail_at_creation(settings: ConnectionSettings, uri: str, message: str) -> None:
    with pytest.raises(SinkConfigError, match=message):
        _feed(settings, uri)


def test_unreachable_brokers_fail_at_creation(settings: ConnectionSettings) -> None:
    feed = _feed(settings, f"kafka://127.0.0.1:{free_port()}/t?dial-timeout=1s")
    began = time.monotonic()
    with pytest.raises(SinkError, match="cannot reach Kafka brokers") as raised:
        feed.create()
    assert raised.value.retriable and time.monotonic() - began < 15


def test_partition_counts(settings: ConnectionSettings, bootstrap: str) -> None:
    topic = _topic()
    limit = f"max-message-bytes={SINK_LIMIT}"
    assert _feed(settings, f"kafka://{bootstrap}/{topic}?partition-num=2&{limit}").create().partitions == 2
    with pytest.raises(TopicError, match=f"partition-num=5 exceeds the 2 partitions of topic '{topic}'"):
        _feed(settings, f"kafka://{bootstrap}/{topic}?partition-num=5&{limit}").create()
    info = _feed(settings, f"kafka://{bootstrap}/{topic}?partition-num=1&{limit}").create()
    assert any("smaller than the 2 partitions" in w for w in info.warnings)


def test_replication_factor_above_live_brokers_fails(settings: ConnectionSettings, bootstrap: str) -> None:
    uri = f"kafka://{bootstrap}/{_topic()}?replication-factor=3&max-message-bytes={SINK_LIMIT}"
    with pytest.raises(TopicError, match="replication-factor 3"):
        _feed(settings, uri).create()


def test_replication_factor_below_min_insync_replicas_fails(
    settings: ConnectionSettings, kafka: KafkaReference
) -> None:
    """Needs DescribeConfigs to read min.insync.replicas: Apache Kafka only for now."""
    topic = _topic()
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    new = NewTopic(topic, num_partitions=1, replication_factor=1, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(30)
    with pytest.raises(TopicError, match=r"replication-factor 1 is below min\.insync\.replicas=2"):
        _feed(settings, f"kafka://{kafka.bootstrap_servers}/{topic}").create()


def test_message_limit_is_capped_by_the_topic(settings: ConnectionSettings, bootstrap: str) -> None:
    topic = _topic()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=1, replication_factor=1, config={"max.message.bytes": "50000"})
    admin.create_topics([new])[topic].result(30)
    info = _feed(settings, f"kafka://{bootstrap}/{topic}").create()
    assert info.max_message_bytes == 50000 - BATCH_OVERHEAD
    assert any("capped" in w for w in info.warnings)
