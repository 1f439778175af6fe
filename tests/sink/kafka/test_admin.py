"""Topic checks against the Apache Kafka reference: creation, partition counts, RF vs min ISR, limits."""

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing import KafkaReference
from lakefeed_testing.net import free_port
from sink.errors import SinkError, TopicError
from sink.kafka.admin import BATCH_OVERHEAD, prepare_topic
from sink.uri import parse_sink_uri


def _name() -> str:
    return f"cf-{uuid.uuid4().hex[:8]}"


def _make_topic(kafka: KafkaReference, name: str, partitions: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=configs)
    admin.create_topics([topic])[name].result(30)


def test_missing_topic_is_created_with_partition_num(kafka: KafkaReference) -> None:
    name = _name()
    info = prepare_topic(parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{name}?partition-num=4"))
    assert info.created and info.partitions == 4 and info.replication_factor == 1
    metadata = AdminClient({"bootstrap.servers": kafka.bootstrap_servers}).list_topics(name, timeout=10)
    assert len(metadata.topics[name].partitions) == 4


def test_missing_topic_without_auto_create_fails(kafka: KafkaReference) -> None:
    uri = f"kafka://{kafka.bootstrap_servers}/{_name()}?auto-create-topic=false"
    with pytest.raises(TopicError, match="does not exist and auto-create-topic=false"):
        prepare_topic(parse_sink_uri(uri))


def test_partition_num_above_real_count_fails_and_below_warns(kafka: KafkaReference) -> None:
    name = _name()
    _make_topic(kafka, name, 2)
    with pytest.raises(TopicError, match="partition-num=5 exceeds the 2 partitions"):
        prepare_topic(parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{name}?partition-num=5"))
    info = prepare_topic(parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{name}?partition-num=1"))
    assert not info.created and info.partitions == 2
    assert any("smaller than the 2 partitions" in warning for warning in info.warnings)


def test_replication_factor_below_min_insync_replicas_fails_with_acks_all(kafka: KafkaReference) -> None:
    name = _name()
    _make_topic(kafka, name, 1, **{"min.insync.replicas": "2"})
    with pytest.raises(TopicError, match=r"replication-factor 1 is below min.insync.replicas=2"):
        prepare_topic(parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{name}"))
    info = prepare_topic(parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{name}?required-acks=1"))
    assert info.min_insync_replicas == 2


def test_replication_factor_above_brokers_fails_at_creation(kafka: KafkaReference) -> None:
    uri = f"kafka://{kafka.bootstrap_servers}/{_name()}?replication-factor=3&required-acks=1"
    with pytest.raises(TopicError, match="replication-factor 3"):
        prepare_topic(parse_sink_uri(uri))


def test_max_message_bytes_is_capped_by_the_topic(kafka: KafkaReference) -> None:
    name = _name()
    _make_topic(kafka, name, 1, **{"max.message.bytes": "50000"})
    info = prepare_topic(parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{name}"))
    assert info.max_message_bytes == 50000 - BATCH_OVERHEAD
    assert any("capped" in warning for warning in info.warnings)


def test_unreachable_brokers_fail_fast_and_retriable() -> None:
    uri = f"kafka://127.0.0.1:{free_port()}/t?dial-timeout=1s"
    with pytest.raises(SinkError, match="cannot reach Kafka brokers") as raised:
        prepare_topic(parse_sink_uri(uri), timeout=2)
    assert raised.value.retriable
