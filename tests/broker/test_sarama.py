"""Sarama (github.com/IBM/sarama), the Go client, against our broker and against Apache Kafka 4.3 (the
reference): the same Go program (tests/broker/sarama_client, built here with the machine's Go from the module
cache scripts/setup.sh filled) runs each scenario with Sarama speaking Kafka 4.3 and with Sarama's default
version (2.8), and the same assertions hold for both brokers.

admin: ClusterAdmin's CreateTopic (with a config, again, validate-only), ListTopics, DescribeTopics,
DescribeCluster, DescribeConfig (topic, broker), IncrementalAlterConfig, CreatePartitions (more, fewer),
ListPartitionReassignments, DeleteRecords and DeleteTopic. produce: an idempotent AsyncProducer per compression
codec and a SyncProducer; every message is read back at the partition and offset its producer reported.
consume: partition consumers from OffsetOldest, OffsetNewest, a given offset and past the end; offsets by
timestamp. group: two members of a ConsumerGroup share the partitions and commit; a new member resumes from the
committed offsets; the group's offsets and the group are deleted (DeleteConsumerGroupOffset,
DeleteConsumerGroup). txn: a transactional producer's committed, aborted and open transactions as
read_committed and read_uncommitted consumers see them, and the group offsets sent to the committed transaction.
eos: consume-transform-produce, each message's output and offset in one transaction (AddMessageToTxn).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lakefeed_testing import KafkaReference
from tests.broker import go_clients
from tests.broker.conftest import BrokerProcess, Target

pytestmark = pytest.mark.integration

# Sarama speaking Kafka 4.3, and its default (the version it has full protocol coverage for)
VERSIONS = ["4.3.0", "default"]
UNKNOWN_TOPIC = "kafka server: Request was for a topic or partition that does not exist on this broker"


@pytest.fixture(scope="session")
def sarama_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return go_clients.build(tmp_path_factory)


@pytest.mark.parametrize("version", VERSIONS)
def test_cluster_admin(target: Target, sarama_client: Path, version: str) -> None:
    result = go_clients.run(sarama_client, target, "admin", version)
    assert result["create_again"] == "kafka server: Topic with this name already exists", result
    assert (result["listed_partitions"], result["listed_retention_ms"]) == (6, "3600000"), result
    assert result["described_partitions"] == list(range(6)), result
    assert result["controller_known"] and result["broker_config_entries"], result
    assert result["config_values"] == {"retention.ms": "3600000", "cleanup.policy": "delete"}, result
    assert result["config_sources"] == {"retention.ms": "Topic", "cleanup.policy": "Default"}, result
    assert result["altered"] == {"retention.ms": "7200000"}, result
    assert result["grown_partitions"] == list(range(8)), result
    assert result["create_fewer"] == "kafka server: Number of partitions is invalid", result
    assert result["reassignments"] == "none, 0 topics", result
    assert result["delete_records"] == {"oldest": 10, "newest": 20, "first_consumed": 10}, result
    assert result["after_delete_topic"] == UNKNOWN_TOPIC, result


def test_a_topic_has_the_configs_of_a_kafka_topic(broker: BrokerProcess, kafka: KafkaReference,
                                                  sarama_client: Path) -> None:
    """DescribeConfig of a topic: the same config names, of the same types, as Kafka 4.3's."""
    ours = go_clients.run(sarama_client, Target("lakefeed", broker.bootstrap, broker.log_path), "admin", "4.3.0")
    reference = go_clients.run(sarama_client, Target("kafka", f"127.0.0.1:{kafka.port}"), "admin", "4.3.0")
    assert ours["config_types"] == reference["config_types"]


@pytest.mark.parametrize("version", VERSIONS)
def test_idempotent_compressed_and_sync_producers(target: Target, sarama_client: Path, version: str) -> None:
    result = go_clients.run(sarama_client, target, "produce", version)
    assert result["produced"] == result["consumed"] == 5 * 600 + 300, result
    assert result["sync_produced"] == 300, result
    # every message at the partition and offset its producer reported, with its key, in the order sent
    assert (result["mismatches"], result["header_mismatches"], result["keys_split"]) == (0, 0, 0), result
    assert result["ordered"], result
    assert sorted(result["partition_counts"]) == ["0", "1", "2", "3"], result


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_consumers_and_offset_lookups(target: Target, sarama_client: Path, version: str) -> None:
    result = go_clients.run(sarama_client, target, "consume", version)
    assert (result["from_oldest"], result["from_newest"], result["first_from_newest"]) == (150, 50, 100), result
    assert (result["high_water_mark"], result["first_from_42"]) == (150, 42), result
    assert result["past_end"] == ("kafka server: The requested offset is outside the range of offsets maintained "
                                  "by the server for the given topic/partition"), result
    assert (result["oldest_offset"], result["newest_offset"], result["empty_newest"]) == (0, 150, 0), result
    # by timestamp: the first message at or after it; none after the last one (-1)
    assert (result["offset_at_time_30"], result["offset_after_last"]) == (30, -1), result


@pytest.mark.parametrize("version", VERSIONS)
def test_consumer_group_shares_commits_and_resumes(target: Target, sarama_client: Path, version: str) -> None:
    result = go_clients.run(sarama_client, target, "group", version)
    assert result["members_partitions"] == [2, 2], result
    assert result["distinct_consumed"] == result["consumed"] == 2000 and result["out_of_order"] == 0, result
    assert result["running"] == {"state": "Stable", "protocol_type": "consumer", "protocol": "range", "members": 2,
                                 "assigned": [0, 1, 2, 3], "listed": "consumer"}, result
    assert result["empty"] == {"state": "Empty", "protocol_type": "consumer", "protocol": "", "members": 0,
                               "assigned": [], "listed": "consumer"}, result
    assert result["committed"] == result["end_offsets"] and sum(result["committed"].values()) == 2000, result
    # the new member starts at the committed offsets: only the 500 messages produced since
    assert result["resumed_at"] == result["committed"], result
    assert result["resumed_distinct"] == result["resumed_consumed"] == 500, result
    assert result["resumed_old_messages"] == 0, result
    assert result["committed_at_end"] == result["end_offsets_at_end"], result
    assert sum(result["committed_at_end"].values()) == 2500, result
    # OffsetDelete and DeleteGroups: refused while the members run, done once the group is empty
    assert result["delete_offset_running"] == ("kafka server: Deleting offsets of a topic is forbidden while the "
                                               "consumer group is actively subscribed to it"), result
    assert result["delete_group_running"] == "kafka server: The group is not empty", result
    assert result["delete_offset"] == "none", result
    assert result["after_delete_offset"] == {**result["committed_at_end"], "0": -1}, result
    assert result["delete_group"] == "none", result
    assert result["delete_group_again"] == "kafka server: The group id does not exist", result


@pytest.mark.parametrize("version", VERSIONS)
def test_transactions_as_read_committed_and_read_uncommitted_see_them(
        target: Target, sarama_client: Path, version: str) -> None:
    result = go_clients.run(sarama_client, target, "txn", version)
    assert result["read_committed_while_open"] == {"c1": 100, "c2": 100}, result
    assert result["read_uncommitted"] == {"c1": 100, "ab": 100, "c2": 100, "open": 50}, result
    assert result["read_committed"] == {"c1": 100, "c2": 100, "open": 50}, result
    assert result["committed_in_order"] and result["ordered"], result
    # the committed transaction's offsets, not the aborted one's
    assert result["group_offsets"] == {"0": 11, "1": 12, "2": 13}, result


@pytest.mark.parametrize("version", VERSIONS)
def test_consume_transform_produce_with_the_group_offsets_in_each_transaction(
        target: Target, sarama_client: Path, version: str) -> None:
    result = go_clients.run(sarama_client, target, "eos", version)
    assert result["transactions"] == 100, result
    assert (result["distinct_outputs"], result["duplicate_outputs"]) == (100, 0), result
    assert result["committed_offset"] == 100, result
