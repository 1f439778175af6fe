"""Producer-state snapshots and the flush policy's recovery-point checkpoint."""

from __future__ import annotations

from pathlib import Path

from broker.storage import checkpoint
from broker.storage.config import StorageConfig
from broker.storage.log import STATE, DiskPartitionLog
from tests.broker.storage.batches import record_batch


def idempotent(pid: int, epoch: int, seq: int, n: int = 2) -> bytes:
    return record_batch([(b"k", b"v")] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_producer_state_survives_reopen_crash_and_truncation(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig())
    log.append(idempotent(7, 0, 0), 0)
    log.append(idempotent(8, 1, 0), 0)
    log.append(idempotent(7, 0, 2), 0)
    assert (log.producers.entries[7].last_sequence, log.producers.entries[7].last_offset) == (3, 5)
    log.close()
    assert (tmp_path / f"{6:020d}.snapshot").exists()
    log = DiskPartitionLog(tmp_path, StorageConfig())
    assert log.producers.entries[8].last_offset == 3
    log.append(idempotent(9, 0, 0), 0)
    for segment in log.segments:  # crash: the snapshot at 6 is older than the log end
        segment.close()
    log = DiskPartitionLog(tmp_path, StorageConfig())
    assert set(log.producers.entries) == {7, 8, 9}
    log.truncate_to(4)
    assert log.producers.entries[7].last_sequence == 1 and 9 not in log.producers.entries
    log.close()


def test_flush_messages_advances_the_recovery_point(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig(flush_messages=4))
    for i in range(5):
        log.append(record_batch([(b"k", b"v")]), 0)
        recovery = checkpoint.read_offsets(tmp_path / STATE)["recovery-point"]
        assert recovery == (4 if i >= 3 else 0)
    synced = DiskPartitionLog(tmp_path / "b", StorageConfig(fsync_every_append=True))
    synced.append(record_batch([(b"k", b"v")] * 3), 0)
    assert checkpoint.read_offsets(tmp_path / "b" / STATE) == {
        "recovery-point": 3, "log-start-offset": 0, "high-watermark": 3}
    log.close()
    synced.close()
