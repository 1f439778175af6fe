"""A follower's append keeps the leader's batches byte for byte (Kafka's appendAsFollower): offsets, leader
epochs, LogAppendTime stamps and producer state come out as on the leader; a gap is refused."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from broker.log_store import materialize
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from tests.broker.kio_wire import record_batch


def test_a_follower_log_is_the_leaders_byte_for_byte(tmp_path: Path) -> None:
    config = StorageConfig(timestamp_type_log_append=True)
    leader = DiskPartitionLog(tmp_path / "leader", config)
    for i in range(4):
        leader.append(record_batch([b"a", b"b"], producer_id=9, epoch=0, base_sequence=2 * i), leader_epoch=3 + i // 2)
    data = materialize(leader.read(0, 1 << 20).chunks)
    time.sleep(0.01)  # a re-stamped append time would differ
    follower = DiskPartitionLog(tmp_path / "follower", config)
    follower.append_replicated(data)
    assert materialize(follower.read(0, 1 << 20).chunks) == data
    assert follower.log_end_offset == leader.log_end_offset == 8
    assert follower.leader_epochs == leader.leader_epochs == [(3, 0), (4, 4)]
    assert follower.producers.entries == leader.producers.entries
    with pytest.raises(ValueError, match="log ends at 8"):
        follower.append_replicated(data)  # offsets 0.. again: not a continuation
    leader.close()
    follower.close()
