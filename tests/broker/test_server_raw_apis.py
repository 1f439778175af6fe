"""APIs that clients reach rarely, spoken in bytes over TCP: old Produce versions, transactions,
leader epochs, paged DescribeTopicPartitions."""

from __future__ import annotations

import datetime
import socket
import struct

from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest as AddPartitionsV3
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic as AddTopicV3
from kio.schema.add_partitions_to_txn.v5.request import AddPartitionsToTxnRequest as AddPartitionsV5
from kio.schema.add_partitions_to_txn.v5.request import AddPartitionsToTxnTopic as AddTopicV5
from kio.schema.add_partitions_to_txn.v5.request import AddPartitionsToTxnTransaction
from kio.schema.describe_topic_partitions.v0.request import Cursor, DescribeTopicPartitionsRequest, TopicRequest
from kio.schema.end_txn.v1.request import EndTxnRequest as EndTxnRequestV1
from kio.schema.end_txn.v5.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

from tests.broker.conftest import BrokerProcess
from tests.broker.kio_wire import produce, read_frame, record_batch, roundtrip


def _legacy_produce(version: int, topic: str, acks: int = 1) -> bytes:
    name = topic.encode()
    records = record_batch([b"old"])
    body = struct.pack(">hi", acks, 5000) + struct.pack(">i", 1) + struct.pack(">h", len(name)) + name
    body += struct.pack(">i", 1) + struct.pack(">ii", 0, len(records)) + records
    header = struct.pack(">hhih", 0, version, 41, 5) + b"tests"
    return struct.pack(">i", len(header) + len(body)) + header + body


def test_old_produce_versions_get_unsupported_version_not_a_dropped_connection(
    broker: BrokerProcess, topic_name: str
) -> None:
    for version in (0, 1, 2):
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            sock.sendall(_legacy_produce(version, topic_name))
            data = read_frame(sock)
        correlation, topics = struct.unpack_from(">ii", data)
        (length,) = struct.unpack_from(">h", data, 8)
        assert (correlation, topics, data[10 : 10 + length].decode()) == (41, 1, topic_name)
        partitions, index, error, base_offset = struct.unpack_from(">iihq", data, 10 + length)
        assert (partitions, index, error, base_offset) == (1, 0, ErrorCode.unsupported_version, -1)
        assert len(data) == 10 + length + 18 + (8 if version >= 2 else 0) + (4 if version >= 1 else 0)


def test_transactional_apis_check_ids_epochs_and_partitions(broker: BrokerProcess, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(10)
    txn = f"raw-{topic_name}"
    _, init = roundtrip(broker.port, 22, 4, InitProducerIdRequest(
        transactional_id=txn, transaction_timeout=datetime.timedelta(seconds=60), producer_id=-1,
        producer_epoch=-1))  # fmt: skip
    assert init.error_code == ErrorCode.none and init.producer_epoch == 0
    pid = init.producer_id
    _, too_long = roundtrip(broker.port, 22, 4, InitProducerIdRequest(
        transactional_id=txn, transaction_timeout=datetime.timedelta(hours=1), producer_id=-1,
        producer_epoch=-1))  # fmt: skip
    assert too_long.error_code == ErrorCode.invalid_transaction_timeout  # over transaction.max.timeout.ms
    _, unknown = roundtrip(broker.port, 24, 3, AddPartitionsV3(
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
        v3_and_below_topics=(AddTopicV3(name=topic_name, partitions=(0, 7)),)))  # fmt: skip
    codes = [r.partition_error_code for r in unknown.results_by_topic_v3_and_below[0].results_by_partition]
    assert codes == [ErrorCode.operation_not_attempted, ErrorCode.unknown_topic_or_partition]
    _, added = roundtrip(broker.port, 24, 3, AddPartitionsV3(
        v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
        v3_and_below_topics=(AddTopicV3(name=topic_name, partitions=(0,)),)))  # fmt: skip
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.none
    _, verified = roundtrip(broker.port, 24, 5, AddPartitionsV5(transactions=(AddPartitionsToTxnTransaction(
        transactional_id=txn, producer_id=pid, producer_epoch=0, verify_only=True,
        topics=(AddTopicV5(name=topic_name, partitions=(0, 1)),)),)))  # fmt: skip
    results = verified.results_by_transaction[0].topic_results[0].results_by_partition
    assert [r.partition_error_code for r in results] == [ErrorCode.none, ErrorCode.invalid_txn_state]
    _, stale = roundtrip(broker.port, 26, 1, EndTxnRequestV1(transactional_id=txn, producer_id=pid,
                                                             producer_epoch=-1, committed=True))
    assert stale.error_code == ErrorCode.invalid_producer_epoch  # PRODUCER_FENCED, as v1 clients know it
    _, wrong_id = roundtrip(broker.port, 26, 5, EndTxnRequest(transactional_id=txn, producer_id=pid + 1,
                                                              producer_epoch=0, committed=True))
    assert wrong_id.error_code == ErrorCode.invalid_producer_id_mapping
    _, end = roundtrip(broker.port, 26, 5, EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=0,
                                                         committed=False))
    assert end.error_code == ErrorCode.none
    _, listed = roundtrip(broker.port, 66, 1, ListTransactionsRequest(state_filters=("CompleteAbort", "Bogus"),
                                                                      producer_id_filters=(pid,)))
    assert listed.error_code == ErrorCode.none and listed.unknown_state_filters == ("Bogus",)
    assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [(txn, "CompleteAbort")]


def test_offset_for_leader_epoch_answers_epoch_zero_to_the_log_end(broker: BrokerProcess, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    assert produce(broker.port, topic_name, record_batch([b"a", b"b", b"c"]))[0] == ErrorCode.none

    def ask(current: int, epoch: int, partition: int = 0) -> tuple[int, int, int]:
        _, response = roundtrip(broker.port, 23, 4, OffsetForLeaderEpochRequest(replica_id=-1, topics=(
            OffsetForLeaderTopic(topic=topic_name, partitions=(OffsetForLeaderPartition(
                partition=partition, current_leader_epoch=current, leader_epoch=epoch),)),)))  # fmt: skip
        result = response.topics[0].partitions[0]
        return result.error_code, result.leader_epoch, result.end_offset

    assert ask(0, 0) == (ErrorCode.none, 0, 3)
    assert ask(-1, 5) == (ErrorCode.none, 0, 3)
    assert ask(3, 0)[0] == ErrorCode.unknown_leader_epoch
    assert ask(0, 0, partition=7)[0] == ErrorCode.unknown_topic_or_partition


def test_describe_topic_partitions_pages_with_a_cursor(broker: BrokerProcess, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 5, 1)])[topic_name].result(10)
    seen: list[int] = []
    cursor = None
    for _ in range(5):
        _, response = roundtrip(broker.port, 75, 0, DescribeTopicPartitionsRequest(
            topics=(TopicRequest(name=topic_name), TopicRequest(name="zz-missing")),
            response_partition_limit=2, cursor=cursor))  # fmt: skip
        ours = [t for t in response.topics if t.name == topic_name]
        seen += [p.partition_index for t in ours for p in t.partitions]
        if response.next_cursor is None:
            assert response.topics[-1].error_code == ErrorCode.unknown_topic_or_partition
            break
        cursor = Cursor(topic_name=response.next_cursor.topic_name,
                        partition_index=response.next_cursor.partition_index)
    assert seen == [0, 1, 2, 3, 4]
