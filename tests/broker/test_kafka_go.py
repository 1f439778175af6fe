"""segmentio/kafka-go, the other common Go client, against our broker and against Apache Kafka 4.3 (the
reference), through the same Go program as the Sarama tests (tests/broker/sarama_client, its kafka-go-*
scenarios); the same assertions hold for both brokers.

kafka-go-admin: its Client's CreateTopics (again: TOPIC_ALREADY_EXISTS), Metadata, DescribeConfigs,
CreatePartitions, ListOffsets, OffsetCommit/OffsetFetch/OffsetDelete of a group that only stores offsets,
DeleteGroups and DeleteTopics. kafka-go-produce: a Writer per compression codec (key hash balancer, acks=all,
headers) read back by partition Readers. kafka-go-group: two group Readers share a topic and commit every
message; a new Reader of the group resumes from the committed offsets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker import go_clients
from tests.broker.conftest import Target

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def go_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return go_clients.build(tmp_path_factory)


def test_client_admin_requests(target: Target, go_client: Path) -> None:
    result = go_clients.run(go_client, target, "kafka-go-admin")
    assert result["create_again"] == "Topic Already Exists", result
    assert result["partitions"] == [0, 1, 2], result
    assert result["retention"] == "3600000 source 1", result  # DYNAMIC_TOPIC_CONFIG
    assert (result["grown"], result["written"]) == ("none", 50), result
    assert result["committed"] == ['3 "m"', '4 ""'], result
    assert result["offset_delete"] == "none none", result
    assert result["after_delete"] == ['-1 ""', '4 ""'], result
    assert (result["group_deleted"], result["topic_deleted"]) == ("none", "none"), result


def test_writers_with_every_codec_read_back_by_partition_readers(target: Target, go_client: Path) -> None:
    result = go_clients.run(go_client, target, "kafka-go-produce")
    assert result["produced"] == result["consumed"] == 2500, result
    assert (result["out_of_order"], result["bad_headers"], result["keys_split"]) == (0, 0, 0), result
    assert sorted(result["partition_counts"]) == ["0", "1", "2", "3"], result


def test_group_readers_share_commit_and_resume(target: Target, go_client: Path) -> None:
    result = go_clients.run(go_client, target, "kafka-go-group")
    assert (result["distinct"], result["duplicates"]) == (1000, 0), result
    assert (result["state"], result["members"], result["assigned"]) == ("Stable", 2, [0, 1, 2, 3]), result
    assert result["listed"] == "consumer", result
    assert result["committed"] == ['250 ""'] * 4, result  # round-robin writes: 250 a partition
    assert (result["resumed_distinct"], result["resumed_duplicate"], result["resumed_old"]) == (300, 0, 0), result
    assert result["committed_at_end"] == ['325 ""'] * 4, result
