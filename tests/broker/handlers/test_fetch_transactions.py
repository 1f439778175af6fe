"""Fetch and ListOffsets by isolation level over a real disk log with transactions written through the
PartitionManager (transactional batches by the leader append path, markers by `write_marker`): read_committed
reads up to the last stable offset and gets the aborted transactions; read_uncommitted reads up to the high
watermark; every answer carries the LSO. Clients may not write markers; stale markers are fenced."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.static.primitive import i8, i32, i64

from broker.config import BrokerConfig
from broker.core.state import BrokerState
from broker.handlers import fetch, list_offsets
from broker.log_store import materialize
from broker.protocol import records
from broker.protocol.control import encode_marker
from broker.protocol.errors import KafkaApiError
from broker.protocol.framing import RequestHeader, RequestReceived
from broker.protocol.spliced import SplicedResponse
from broker.server import build_state
from broker.storage.store import DiskLogStore
from broker.topics import Topic
from tests.broker.storage.batches import record_batch

A, B, C = 1001, 1002, 1003


def _txn(pid: int, values: list[bytes], sequence: int = 0) -> bytes:
    return record_batch([(None, v) for v in values], producer_id=pid, producer_epoch=0, base_sequence=sequence,
                        transactional=True)


def _fetch(state: BrokerState, offset: int, isolation: int) -> tuple[Any, list[records.BatchHeader]]:
    body = FetchRequest(
        replica_id=i32(-1), max_wait=datetime.timedelta(0), min_bytes=i32(1), max_bytes=i32(1 << 20),  # type: ignore[arg-type]
        isolation_level=i8(isolation),
        topics=(FetchTopic(topic="t", partitions=(FetchPartition(
            partition=i32(0), fetch_offset=i64(offset), log_start_offset=i64(-1), partition_max_bytes=i32(1 << 20),
        ),)),),
        forgotten_topics_data=(),
    )  # fmt: skip
    response = asyncio.run(fetch.handle(state, RequestReceived(RequestHeader(1, 12, 1, "c"), body, 0)))  # type: ignore[arg-type]
    inserts = {}
    if isinstance(response, SplicedResponse):
        inserts = {insert.token: materialize(insert.chunks) for insert in response.inserts}
        response = response.response
    answer = response.responses[0].partitions[0]
    data = inserts.get(answer.records, answer.records) or b""
    return answer, list(records.iter_batches(data))


def _latest(state: BrokerState, isolation: int, timestamp: int = -1) -> int:
    body = ListOffsetsRequest(replica_id=i32(-1), isolation_level=i8(isolation), topics=(ListOffsetsTopic(  # type: ignore[arg-type]
        name="t", partitions=(ListOffsetsPartition(partition_index=i32(0), timestamp=i64(timestamp)),)),))
    response = asyncio.run(list_offsets.handle(state, RequestReceived(RequestHeader(2, 7, 1, "c"), body, 0)))  # type: ignore[arg-type]
    return int(response.topics[0].partitions[0].offset)


@pytest.fixture
def state(tmp_path: Path) -> BrokerState:
    return build_state(BrokerConfig().with_overrides({"log.dirs": str(tmp_path)}), DiskLogStore(tmp_path))


def _append(state: BrokerState, topic: Topic, data: bytes) -> int:
    return state.partitions.append_as_leader(topic, 0, data, 1 << 20).base_offset


def test_read_committed_stops_at_the_lso_and_gets_the_aborted_transactions(state: BrokerState) -> None:
    topic = state.create_topic("t", 1, {})
    partitions = state.partitions
    assert _append(state, topic, record_batch([(None, b"p0")])) == 0
    assert _append(state, topic, _txn(A, [b"a1", b"a2"])) == 1  # 1-2
    assert partitions.write_marker(topic, 0, A, 0, commit=False, coordinator_epoch=0) == 3
    assert _append(state, topic, _txn(B, [b"b1"])) == 4
    assert partitions.write_marker(topic, 0, B, 0, commit=True, coordinator_epoch=0) == 5
    assert _append(state, topic, record_batch([(None, b"p1")])) == 6
    assert _append(state, topic, _txn(C, [b"c1"])) == 7  # open
    assert _append(state, topic, record_batch([(None, b"p2")], base_timestamp=1_800_000_000_000)) == 8

    answer, batches = _fetch(state, 0, isolation=1)
    assert (answer.high_watermark, answer.last_stable_offset) == (9, 7)
    assert [h.base_offset for h in batches] == [0, 1, 3, 4, 5, 6]  # whole batches below the LSO
    assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(A, 1)]
    answer, batches = _fetch(state, 4, isolation=1)  # A's transaction ended before offset 4
    assert [h.base_offset for h in batches] == [4, 5, 6] and answer.aborted_transactions == ()
    answer, batches = _fetch(state, 7, isolation=1)  # at the LSO: nothing yet
    assert batches == [] and answer.aborted_transactions == () and answer.last_stable_offset == 7

    answer, batches = _fetch(state, 0, isolation=0)
    assert [h.base_offset for h in batches] == [0, 1, 3, 4, 5, 6, 7, 8]
    assert answer.aborted_transactions is None and answer.last_stable_offset == 7
    assert (_latest(state, 1), _latest(state, 0)) == (7, 9)
    assert _latest(state, 1, timestamp=1_700_000_000_000) == 0
    assert _latest(state, 1, timestamp=1_800_000_000_000) == -1  # offset 8 is past the LSO
    assert _latest(state, 0, timestamp=1_800_000_000_000) == 8

    assert partitions.write_marker(topic, 0, C, 0, commit=False, coordinator_epoch=0) == 9
    answer, batches = _fetch(state, 5, isolation=1)
    assert answer.last_stable_offset == answer.high_watermark == 10
    assert [h.base_offset for h in batches] == [5, 6, 7, 8, 9]
    assert [(t.producer_id, t.first_offset) for t in answer.aborted_transactions] == [(C, 7)]
    assert _latest(state, 1) == 10


def test_clients_may_not_write_markers_and_stale_markers_are_fenced(state: BrokerState) -> None:
    topic = state.create_topic("t", 1, {})
    with pytest.raises(KafkaApiError) as refused:
        state.partitions.append_as_leader(topic, 0, encode_marker(A, 0, True, 0, 0), 1 << 20)
    assert refused.value.code == ErrorCode.invalid_record and "control records" in str(refused.value)
    assert state.partitions.log(topic, 0).log_end_offset == 0

    _append(state, topic, _txn(A, [b"a"]))
    assert state.partitions.write_marker(topic, 0, A, 1, commit=False, coordinator_epoch=3) == 1  # bumps to 1
    with pytest.raises(KafkaApiError) as old_epoch:
        state.partitions.write_marker(topic, 0, A, 0, commit=True, coordinator_epoch=3)
    assert old_epoch.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaApiError) as old_coordinator:
        state.partitions.write_marker(topic, 0, A, 1, commit=True, coordinator_epoch=2)
    assert old_coordinator.value.code == ErrorCode.transaction_coordinator_fenced
    with pytest.raises(KafkaApiError) as stale_data:  # the old epoch's data is fenced too
        _append(state, topic, _txn(A, [b"late"], sequence=1))
    assert stale_data.value.code == ErrorCode.invalid_producer_epoch
    assert state.partitions.log(topic, 0).log_end_offset == 2
