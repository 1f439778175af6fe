"""The leader counts a follower's fetch offset as its log end only when the follower's log agrees with its own
(Kafka's Partition.fetchRecords: no diverging epoch, offset in range). Crediting a divergent suffix would let the
high watermark and the ISR count records the follower does not have: an acknowledged write could then be lost
when that follower is elected."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i32, i64

from broker.config import BrokerConfig
from broker.core.single_node import SingleNode
from broker.handlers.fetch import handle
from broker.protocol.framing import RequestHeader, RequestReceived
from broker.server import build_state
from broker.storage.store import DiskLogStore
from tests.broker.kio_wire import record_batch


class RecordingRole(SingleNode):
    def __init__(self, state: object) -> None:
        super().__init__(state)  # type: ignore[arg-type]
        self.fetches: list[tuple[int, int]] = []

    def on_follower_fetch(self, tp: tuple[str, int], replica_id: int, fetch_offset: int, log_start: int) -> None:
        self.fetches.append((replica_id, fetch_offset))


def _fetch(offset: int, last_fetched_epoch: int, current_epoch: int = -1) -> RequestReceived:
    body = FetchRequest(
        replica_id=i32(2), max_wait=datetime.timedelta(0), min_bytes=i32(1), max_bytes=i32(1 << 20),  # type: ignore[arg-type]
        topics=(FetchTopic(topic="t", partitions=(FetchPartition(
            partition=i32(0), current_leader_epoch=i32(current_epoch), fetch_offset=i64(offset),
            last_fetched_epoch=i32(last_fetched_epoch), log_start_offset=i64(0), partition_max_bytes=i32(1 << 20),
        ),)),),
        forgotten_topics_data=(),
    )
    return RequestReceived(RequestHeader(1, 12, 1, "replica-fetcher"), body, 0)


def test_only_a_follower_fetch_that_agrees_with_the_leaders_log_counts(tmp_path: Path) -> None:
    state = build_state(BrokerConfig().with_overrides({"log.dirs": str(tmp_path)}), DiskLogStore(tmp_path))
    role = RecordingRole(state)
    state.role = role
    topic = state.create_topic("t", 1, {})
    plog = state.partitions.log(topic, 0)
    plog.append(record_batch([b"a"] * 3), 1)  # epoch 1: offsets 0-2
    plog.append(record_batch([b"b"] * 3), 3)  # epoch 3: offsets 3-5

    # The follower led epoch 2 (which this leader never had) up to offset 5: its offsets 3-4 are not ours.
    response = asyncio.run(handle(state, _fetch(5, last_fetched_epoch=2)))  # type: ignore[arg-type]
    answer = response.responses[0].partitions[0]
    assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (1, 3)
    assert role.fetches == []  # before the fix: [(2, 5)], and the HW could pass offsets 3-4 on its account

    asyncio.run(handle(state, _fetch(7, last_fetched_epoch=3)))  # type: ignore[arg-type]  # past our end
    assert role.fetches == []

    asyncio.run(handle(state, _fetch(3, last_fetched_epoch=1)))  # type: ignore[arg-type]  # truncated: agrees
    assert role.fetches == [(2, 3)]
