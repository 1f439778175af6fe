"""KafkaJS (the Node.js client) against our broker and against Apache Kafka 4.3 (the reference): the same Node
program (tests/broker/kafkajs_client, its node_modules installed by scripts/setup.sh with `npm ci`) runs each
scenario against both, and each test asserts the same results for both.

KafkaJS 2.2.4 speaks only non-flexible versions (Produce v7, Fetch v11, Metadata v6, JoinGroup v5, OffsetCommit
v5, OffsetFetch v4, InitProducerId v1, EndTxn v1, ...), so these runs cover the older request versions that the
Java and librdkafka clients no longer send.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.broker.conftest import Target

PROGRAM_DIR = Path(__file__).parent / "kafkajs_client"
pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def node() -> str:
    """The machine's Node.js, with the program's node_modules in place (the test never runs npm)."""
    path = shutil.which("node")
    if path is None:
        pytest.fail("`node` is not on PATH: tests/broker/kafkajs_client needs Node.js 18 or newer (scripts/setup.sh)")
    if not (PROGRAM_DIR / "node_modules" / "kafkajs" / "package.json").is_file():
        pytest.fail(f"{PROGRAM_DIR}/node_modules has no kafkajs: run scripts/setup.sh (npm ci in that directory)")
    return path


def _run(node: str, target: Target, scenario: str, timeout: float = 90) -> dict[str, Any]:
    """Runs one scenario to its end (the program gives up by itself after `timeout`); its results."""
    started = time.monotonic()
    result = subprocess.run([node, "main.js", target.bootstrap, scenario], cwd=PROGRAM_DIR, capture_output=True,
                            text=True, timeout=timeout + 30,
                            env={**os.environ, "SCENARIO_TIMEOUT_MS": str(int(timeout * 1000)),
                                 "KAFKAJS_NO_PARTITIONER_WARNING": "1"})  # KAFKAJS_DEBUG=1 logs every request
    assert result.returncode == 0, (f"{target.name}: kafkajs scenario {scenario} exited {result.returncode} after "
                                    f"{time.monotonic() - started:.1f} s\n{result.stderr[-12000:]}"
                                    f"{target.log_tail()}")
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["scenario"] == scenario
    answer: dict[str, Any] = summary["result"]
    return answer


def _ints(mapping: dict[str, Any]) -> dict[int, int]:
    """JSON's string keys back to partitions."""
    return {int(partition): int(value) for partition, value in mapping.items()}


def test_admin_topics_offsets_groups_and_configs(target: Target, node: str) -> None:
    result = _run(node, target, "admin")
    assert result["createdAgain"] is False, target.name  # TOPIC_ALREADY_EXISTS, which KafkaJS answers as false
    assert result["listed"], target.name
    # internal topics are listed (the transaction log only once some producer has used it)
    assert "__consumer_offsets" in result["internal"], result["internal"]
    assert set(result["internal"]) <= {"__consumer_offsets", "__transaction_state"}, result["internal"]
    healthy = {"error": 0, "replicas": 1, "isr": 1, "hasLeader": True}
    assert result["shape"] == {
        "plain": [{"partition": p, **healthy} for p in range(3)],
        "compacted": [{"partition": p, **healthy} for p in range(2)],
    }, target.name
    assert result["cleanupPolicy"] == {"value": "compact", "isDefault": False, "readOnly": False}, target.name
    assert _ints(result["ends"]) == {0: 5, 1: 0, 2: 12} and _ints(result["lows"]) == {0: 0, 1: 0, 2: 0}
    assert _ints(result["byTimestamp"]) == {0: 5, 1: 0, 2: 12}, target.name  # a future timestamp: the end
    assert _ints(result["committed"]) == {0: 3, 1: -1, 2: 7}, target.name
    # a group that only stores offsets (setOffsets commits outside any generation)
    assert result["group"] == {"state": "Empty", "protocolType": "consumer", "protocol": "", "members": 0,
                               "errorCode": 0}, target.name
    assert result["listedGroup"] == {"protocolType": "consumer"}, target.name
    assert result["reassignments"] == [{"topics": []}, {"topics": []}], target.name
    assert result["grown"] == 5, target.name
    assert result["afterGroupDelete"] == {"state": "Dead", "members": 0}, target.name
    assert result["gone"] and result["deletedMetadata"] == "UNKNOWN_TOPIC_OR_PARTITION", target.name
    assert result["cluster"] == {"brokers": 1, "hasController": True}, target.name


def test_idempotent_and_plain_producers_with_keys_headers_and_gzip(target: Target, node: str) -> None:
    result = _run(node, target, "produce")
    assert result["acked"] and result["sent"] == 4001, result
    assert result["received"] == result["distinct"] == 4001, (target.name, result)
    assert result["problems"] == [], (target.name, result["problems"])  # offsets and each key's order
    assert result["headerMismatch"] == 0 and result["keyMismatch"] == 0, (target.name, result)
    assert result["partitionsUsed"] == 4, (target.name, result)
    assert _ints(result["ends"]) == _ints(result["perPartition"]), (target.name, result)


def test_two_consumers_of_a_group_then_a_restart_resumes_at_the_committed_offsets(target: Target, node: str) -> None:
    result = _run(node, target, "group")
    assert (result["generationState"], result["members"], result["assignment"]) == ("Stable", 2, [2, 2]), result
    assert (result["protocolType"], result["protocol"]) == ("consumer", "RoundRobinAssigner"), target.name
    assert result["memberDetails"] == [{"clientId": "lakefeed-kafkajs", "clientHost": "/127.0.0.1",
                                        "memberIdPrefix": True, "topics": 1, "version": 0}] * 2, target.name
    first = result["firstRun"]
    assert first["received"] == 2000 and first["problems"] == [], (target.name, first)
    assert first["byConsumer"] == [True, True], target.name
    ends = _ints(result["ends"])
    assert sum(ends.values()) == 2000 and _ints(first["perPartition"]) == ends, (target.name, result)
    assert _ints(result["committed"]) == ends, target.name  # eachMessage's auto commit, eachBatch's by hand
    assert result["afterLeave"] == {"state": "Empty", "members": 0}, target.name
    resumed = result["resumed"]
    assert resumed["received"] == 300 and resumed["prefixes"] == ["resume"], (target.name, resumed)
    assert resumed["problems"] == [], (target.name, resumed)
    # it began each partition where the first run's commits ended, although it asked for fromBeginning
    assert {p: o for p, o in _ints(resumed["from"]).items()} == {p: ends[p] for p in _ints(resumed["from"])}
    assert _ints(result["finalCommitted"]) == _ints(result["finalEnds"]), target.name
    assert sum(_ints(result["finalEnds"]).values()) == 2300, target.name


def test_a_member_killed_without_leaving_loses_its_partitions_at_its_session_timeout(target: Target,
                                                                                     node: str) -> None:
    result = _run(node, target, "crash")
    assert result["sharedAssignment"] == [2, 2], (target.name, result)
    assert result["rejoinedWithAll"] == 4, (target.name, result)  # the survivor's assignment after the rebalance
    assert result["received"] == result["perPartitionTotal"] == 400 and result["problems"] == [], (target.name,
                                                                                                  result)
    assert result["group"] == {"state": "Stable", "members": 1}, target.name


def test_transactions_commit_abort_and_read_committed(target: Target, node: str) -> None:
    result = _run(node, target, "transactions")
    # 150 + 60 + 90 records and one control record in each of the 3 partitions for each of 3 ended transactions;
    # the open transaction's 30 records lie beyond the last stable offset KafkaJS lists
    assert result["lastStableTotal"] == 309, (target.name, result)
    assert _ints(result["groupOffsets"]) == {0: 5, 1: 8}, target.name  # the committed transaction's sendOffsets
    assert result["readCommitted"] == {"counts": {"commit1": 150, "commit2": 90}, "problems": []}, target.name
    assert result["readUncommitted"] == {"counts": {"commit1": 150, "abort": 60, "commit2": 90, "open": 30},
                                         "problems": []}, target.name


def test_a_second_producer_with_the_transactional_id_fences_the_first(target: Target, node: str) -> None:
    result = _run(node, target, "fencing")
    assert result["fenced"] == "INVALID_PRODUCER_EPOCH", target.name  # EndTxn v1 of the older epoch
    assert result["readCommitted"] == ["current"], target.name
    assert result["readUncommitted"] == ["fenced", "current"], target.name
    assert _ints(result["ends"]) == {0: 0, 1: 4}, target.name  # two records, an abort and a commit marker


def test_seek_forward_and_back_while_consuming(target: Target, node: str) -> None:
    result = _run(node, target, "seek")
    assert result["seeks"] == [60, 10], target.name
    assert result["partition0"] == [0, *range(60, 100), *range(10, 100)], target.name
    assert result["partition1Count"] == 100 and result["partition1InOrder"], target.name


def test_defaults_records_deletion_regex_pause_and_configs(target: Target, node: str) -> None:
    result = _run(node, target, "extras")
    assert result["defaultPartitions"] == 1, target.name  # num.partitions, as both brokers are configured
    assert result["validateOnly"] is True and result["validatedListed"] is False, target.name
    assert result["badPartitions"] == "INVALID_PARTITIONS", target.name
    assert result["autoCreated"] == {"partitions": 1, "baseOffset": "0"}, target.name
    assert result["acksZeroEnd"] == 21, target.name
    assert result["afterDeleteRecords"] == [{"partition": 0, "low": 12, "high": 30},
                                            {"partition": 1, "low": 30, "high": 30}], target.name
    assert _ints(result["byEarlyTimestamp"]) == {0: 12, 1: 30}, target.name
    assert result["ownGroup"] == {"state": "Stable", "members": 1, "protocol": "RoundRobinAssigner"}, target.name
    assert result["nonEmptyDelete"] == "NON_EMPTY_GROUP", target.name
    # paused and resumed at offset 15, nothing lost or repeated; the 150 kB record whole despite maxBytes 4 kB
    assert result["consumed"] == {"partition0": list(range(12, 31)), "partition1": [], "largeSize": 150000}
    assert result["allOffsets"] == [[[0, 31]]], target.name
    assert _ints(result["reset"]) == {0: -2, 1: -2}, target.name
    assert result["resolved"] == [[0, 12], [1, 30]], target.name
    assert result["topicConfig"] == [{"name": "cleanup.policy", "value": "delete", "isDefault": True},
                                     {"name": "retention.ms", "value": "86400000", "isDefault": False}]
    assert result["brokerConfig"] == [{"name": "auto.create.topics.enable", "value": "true"}], target.name
