"""Transactions in the log: producer state (open transaction, markers, epochs), the `.txnindex` of aborted
transactions, the first unstable offset, through appends, truncation, deletion and restarts. Real disk logs
(and the memory log where the rules are the same); the rules are Kafka's ProducerStateManager /
TransactionIndex / UnifiedLog.collectAbortedTransactions."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import crc32c
import pytest
from kio.schema.errors import ErrorCode

from broker.coordinator.producers import check
from broker.log_store import LogConfig, MemoryPartitionLog, PartitionLog
from broker.protocol import records
from broker.protocol.control import encode_marker
from broker.protocol.errors import KafkaApiError
from broker.storage import producer_state
from broker.storage.cleaner import clean
from broker.storage.config import StorageConfig
from broker.storage.log import CLEAN_SHUTDOWN, DiskPartitionLog
from broker.storage.retention import apply_retention
from broker.storage.txn_index import AbortedTxn
from tests.broker.storage.batches import record_batch
from tests.broker.storage.test_properties import contents

A, B, C = 7, 8, 9  # producer ids


def txn(pid: int, sequence: int, count: int = 1, epoch: int = 0) -> bytes:
    return record_batch([(b"k", f"{pid}-{sequence + i}".encode()) for i in range(count)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=sequence, transactional=True)


def plain(count: int = 1) -> bytes:
    return record_batch([(None, b"plain")] * count)


def abort(pid: int, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return encode_marker(pid, epoch, False, coordinator_epoch, 1_700_000_000_000)


def commit(pid: int, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return encode_marker(pid, epoch, True, coordinator_epoch, 1_700_000_000_000)


def header(data: bytes) -> records.BatchHeader:
    return next(records.iter_batches(data))


def disk(tmp_path: Path, **config: int) -> DiskPartitionLog:
    return DiskPartitionLog(tmp_path / "t-0", StorageConfig(**config))


LOGS: dict[str, Callable[[Path], PartitionLog]] = {
    "disk": lambda tmp_path: disk(tmp_path),
    "memory": lambda tmp_path: MemoryPartitionLog(LogConfig()),
}


@pytest.mark.parametrize("kind", LOGS)
def test_open_transactions_set_the_first_unstable_offset_and_aborts_are_indexed(tmp_path: Path, kind: str) -> None:
    log = LOGS[kind](tmp_path)
    log.append(plain(2), leader_epoch=0)  # 0-1
    assert log.first_unstable_offset is None
    log.append(txn(A, 0, 2), leader_epoch=0)  # 2-3: A's transaction opens at 2
    log.append(txn(B, 0), leader_epoch=0)  # 4: B's at 4
    log.append(txn(A, 2), leader_epoch=0)  # 5: still A's transaction from 2
    assert log.first_unstable_offset == 2
    assert log.producers.entries[A].current_txn_first_offset == 2
    log.append(commit(A), leader_epoch=0)  # 6
    assert log.first_unstable_offset == 4
    assert log.producers.entries[A].current_txn_first_offset == -1
    assert log.aborted_transactions(0, 100) == []  # commits are not indexed
    log.append(txn(A, 3), leader_epoch=0)  # 7: A's next transaction
    log.append(abort(B), leader_epoch=0)  # 8: B aborts while A's from 7 is open: LSO after it is 7
    log.append(abort(A), leader_epoch=0)  # 9: nothing else open: LSO after it is the marker's offset + 1
    assert log.first_unstable_offset is None
    assert log.aborted_transactions(0, 100) == [AbortedTxn(B, 4, 8, 7), AbortedTxn(A, 7, 9, 10)]
    # Kafka's overlap rule: lastOffset >= start and firstOffset < upper bound
    assert log.aborted_transactions(5, 7) == [AbortedTxn(B, 4, 8, 7)]
    assert log.aborted_transactions(9, 100) == [AbortedTxn(A, 7, 9, 10)]
    assert log.aborted_transactions(10, 100) == []
    assert log.aborted_transactions(0, 4) == []
    log.close()


def test_markers_leave_sequences_alone_unless_they_bump_the_epoch(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(txn(A, 0, 3), leader_epoch=0)
    log.append(commit(A), leader_epoch=0)
    assert log.producers.entries[A].last_sequence == 2
    assert check(log.producers, "t", 0, header(txn(A, 3))) is None  # the marker took no sequence
    with pytest.raises(KafkaApiError) as gap:
        check(log.producers, "t", 0, header(txn(A, 0)))
    assert gap.value.code == ErrorCode.out_of_order_sequence_number
    retry = check(log.producers, "t", 0, header(txn(A, 0, 3)))  # a retry before the marker is still known
    assert retry is not None and (retry.base_offset, retry.last_offset) == (0, 2)

    log.append(txn(A, 3), leader_epoch=0)  # 4: a transaction the coordinator times out ...
    log.append(abort(A, epoch=1, coordinator_epoch=2), leader_epoch=0)  # 5: ... and aborts with a bumped epoch
    entry = log.producers.entries[A]
    assert (entry.epoch, entry.last_sequence, entry.coordinator_epoch, entry.current_txn_first_offset) == (1, -1, 2, -1)
    assert log.aborted_transactions(0, 100) == [AbortedTxn(A, 4, 5, 6)]
    with pytest.raises(KafkaApiError) as fenced:  # the old epoch is fenced
        check(log.producers, "t", 0, header(txn(A, 4)))
    assert fenced.value.code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaApiError):  # the new epoch starts over at 0
        check(log.producers, "t", 0, header(txn(A, 4, epoch=1)))
    assert check(log.producers, "t", 0, header(txn(A, 0, epoch=1))) is None
    log.close()
    reopened = disk(tmp_path)  # the cleared sequences come back from the snapshot as they were
    assert check(reopened.producers, "t", 0, header(txn(A, 0, epoch=1))) is None
    reopened.close()


def test_control_batches_are_not_sequence_checked_and_open_transactions_refuse_plain_batches(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(txn(A, 0), leader_epoch=0)
    assert check(log.producers, "t", 0, header(commit(A))) is None
    idempotent = record_batch([(b"k", b"v")], producer_id=A, producer_epoch=0, base_sequence=1)
    with pytest.raises(KafkaApiError) as refused:  # Kafka's ProducerAppendInfo: transactional writes expected
        check(log.producers, "t", 0, header(idempotent))
    assert refused.value.code == ErrorCode.invalid_txn_state
    log.append(commit(A), leader_epoch=0)
    assert check(log.producers, "t", 0, header(idempotent)) is None
    log.close()


def test_a_marker_without_records_here_changes_nothing_but_the_epoch(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(abort(C, epoch=4, coordinator_epoch=1), leader_epoch=0)
    assert log.aborted_transactions(0, 100) == [] and log.first_unstable_offset is None
    assert not list((tmp_path / "t-0").glob("*.txnindex"))  # like Kafka's, created with its first entry
    entry = log.producers.entries[C]
    assert (entry.epoch, entry.last_sequence, entry.coordinator_epoch) == (4, -1, 1)
    log.close()


def test_the_txnindex_holds_kafkas_34_byte_entries_in_the_segment_of_the_abort_marker(tmp_path: Path) -> None:
    log = disk(tmp_path, segment_bytes=400)
    log.append(txn(A, 0, 3), leader_epoch=0)  # 0-2
    log.append(txn(B, 0), leader_epoch=0)  # 3
    log.roll()
    log.append(plain(), leader_epoch=0)  # 4
    log.append(abort(A, coordinator_epoch=5), leader_epoch=0)  # 5, in the segment from 4
    log.roll()
    log.append(abort(B), leader_epoch=0)  # 6, in the segment from 6
    directory = tmp_path / "t-0"
    assert sorted(p.name for p in directory.glob("*.txnindex")) == [f"{4:020d}.txnindex", f"{6:020d}.txnindex"]
    assert (directory / f"{4:020d}.txnindex").read_bytes() == struct.pack(">hqqqq", 0, A, 0, 5, 3)
    assert (directory / f"{6:020d}.txnindex").read_bytes() == struct.pack(">hqqqq", 0, B, 3, 6, 7)
    assert len((directory / f"{4:020d}.txnindex").read_bytes()) == 34
    # from the segment holding the start offset on; A's entry (marker 5) is not in the one from 6
    assert log.aborted_transactions(6, 7) == [AbortedTxn(B, 3, 6, 7)]
    assert log.aborted_transactions(0, 3) == [AbortedTxn(A, 0, 5, 3)]
    log.close()


def test_an_open_transaction_survives_a_clean_restart(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(txn(A, 0), leader_epoch=0)
    log.append(abort(A, coordinator_epoch=3), leader_epoch=0)  # 1
    log.append(plain(), leader_epoch=0)  # 2
    log.append(txn(B, 0, 2), leader_epoch=0)  # 3-4, open
    log.close()
    rows = producer_state.snapshot_rows((tmp_path / "t-0" / f"{5:020d}.snapshot").read_bytes())
    assert rows is not None
    by_pid = {row[0]: row for row in rows}
    assert by_pid[A][6:] == (3, -1) and by_pid[B][6:] == (-1, 3)  # coordinatorEpoch, currentTxnFirstOffset
    reopened = disk(tmp_path)
    assert reopened.first_unstable_offset == 3
    assert reopened.producers.entries[A].coordinator_epoch == 3
    assert reopened.aborted_transactions(0, 100) == [AbortedTxn(A, 0, 1, 2)]
    reopened.append(commit(B), leader_epoch=0)
    assert reopened.first_unstable_offset is None
    reopened.close()


def test_unclean_restarts_rebuild_the_open_transactions_and_the_index_from_the_log(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = disk(tmp_path, segment_bytes=200)
    log.append(txn(A, 0), leader_epoch=0)  # 0
    log.append(abort(A), leader_epoch=0)  # 1
    log.close()  # snapshot at 2; then a run that ends in a crash
    log = disk(tmp_path, segment_bytes=200)
    log.append(txn(B, 0), leader_epoch=0)  # 2
    log.append(txn(C, 0), leader_epoch=0)  # 3
    log.append(abort(B), leader_epoch=0)  # 4: LSO after it is C's 3
    log.append(txn(A, 1), leader_epoch=0)  # 5: open at the crash
    expected = [AbortedTxn(A, 0, 1, 2), AbortedTxn(B, 2, 4, 3)]
    assert log.aborted_transactions(0, 100) == expected
    assert len(log.segments) >= 3, [s.base_offset for s in log.segments]
    for index in directory.glob("*.txnindex"):  # lost in the crash, or never written at all
        index.unlink()
    assert not (directory / CLEAN_SHUTDOWN).exists()
    crashed = disk(tmp_path, segment_bytes=200)
    assert crashed.recovered_unclean
    # entries from the snapshot's offset on are replayed; the one before it was trusted, and is gone here
    assert crashed.aborted_transactions(0, 100) == expected[1:]
    assert crashed.first_unstable_offset == 3
    assert {pid: e.current_txn_first_offset for pid, e in crashed.producers.entries.items()} == {A: 5, B: -1, C: 3}
    crashed.close()

    fresh = tmp_path / "fresh"  # no snapshot at all: everything is replayed
    log = DiskPartitionLog(fresh, StorageConfig(segment_bytes=200))
    for data in (txn(A, 0), abort(A), txn(B, 0), txn(C, 0), abort(B), txn(A, 1)):
        log.append(data, leader_epoch=0)
    for index in fresh.glob("*.txnindex"):
        index.write_bytes(index.read_bytes()[:-5])  # torn appends
    again = DiskPartitionLog(fresh, StorageConfig(segment_bytes=200))
    assert again.recovered_unclean and again.aborted_transactions(0, 100) == expected
    assert again.first_unstable_offset == 3
    again.close()


def test_truncating_below_a_marker_drops_its_entry_and_reopens_the_transaction(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(txn(A, 0, 2), leader_epoch=0)  # 0-1
    log.append(plain(), leader_epoch=0)  # 2
    log.append(abort(A), leader_epoch=0)  # 3
    log.append(txn(B, 0), leader_epoch=0)  # 4
    log.append(abort(B), leader_epoch=0)  # 5
    log.close()  # a snapshot at 6: truncation must not trust it
    log = disk(tmp_path)
    log.truncate_to(5)
    assert log.aborted_transactions(0, 100) == [AbortedTxn(A, 0, 3, 4)]
    assert log.first_unstable_offset == 4
    log.truncate_to(3)
    assert log.aborted_transactions(0, 100) == []
    assert log.first_unstable_offset == 0 and log.producers.entries[A].current_txn_first_offset == 0
    assert not list((tmp_path / "t-0").glob("*.txnindex"))
    log.append(commit(A), leader_epoch=1)  # the new leader's outcome
    assert log.first_unstable_offset is None and log.aborted_transactions(0, 100) == []
    log.truncate_to(1)  # inside A's first batch: the whole batch goes, and the transaction with it
    assert log.log_end_offset == 0 and log.first_unstable_offset is None and A not in log.producers.entries
    log.close()


def test_memory_log_truncation_matches(tmp_path: Path) -> None:
    log = MemoryPartitionLog(LogConfig())
    for data in (txn(A, 0, 2), plain(), abort(A), txn(B, 0), abort(B)):
        log.append(data, leader_epoch=0)
    log.truncate_to(5)
    assert log.aborted_transactions(0, 100) == [AbortedTxn(A, 0, 3, 4)] and log.first_unstable_offset == 4
    log.truncate_to(3)
    assert log.aborted_transactions(0, 100) == [] and log.first_unstable_offset == 0
    log.restart_at(10)
    assert log.first_unstable_offset is None


def test_followers_append_the_same_markers_and_entries(tmp_path: Path) -> None:
    leader = disk(tmp_path / "leader")
    follower = disk(tmp_path / "follower")
    for data in (txn(A, 0), txn(B, 0), abort(A, coordinator_epoch=2), commit(B)):
        result = leader.append(data, leader_epoch=3)
        batch = bytearray(data)
        records.patch_batch(batch, header(data), result.base_offset, 3)
        follower.append_replicated(bytes(batch))
    assert follower.aborted_transactions(0, 100) == leader.aborted_transactions(0, 100) == [AbortedTxn(A, 0, 2, 1)]
    assert follower.first_unstable_offset is None
    assert (tmp_path / "follower" / "t-0" / f"{0:020d}.txnindex").read_bytes() == (
        tmp_path / "leader" / "t-0" / f"{0:020d}.txnindex").read_bytes()
    leader.close()
    follower.close()


def test_a_malformed_marker_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    log = disk(tmp_path)
    bad = bytearray(commit(A))
    key_type = bad.index(b"\x08" + struct.pack(">hh", 0, 1)) + 1  # after the key's length varint
    struct.pack_into(">h", bad, key_type + 2, 9)  # control record type 9
    struct.pack_into(">I", bad, 17, crc32c.crc32c(bytes(bad[21:])))
    with pytest.raises(KafkaApiError) as refused:
        log.append(bytes(bad), leader_epoch=0)
    assert refused.value.code == ErrorCode.invalid_record
    assert log.log_end_offset == 0
    log.close()


def test_segments_take_their_txnindex_with_them(tmp_path: Path) -> None:
    log = disk(tmp_path, segment_bytes=300, retention_bytes=1)
    log.append(txn(A, 0), leader_epoch=0)  # 0
    log.append(abort(A), leader_epoch=0)  # 1
    log.roll()
    log.append(txn(B, 0), leader_epoch=0)  # 2
    log.append(abort(B), leader_epoch=0)  # 3
    log.roll()
    log.append(plain(), leader_epoch=0)  # 4
    directory = tmp_path / "t-0"
    assert len(list(directory.glob("*.txnindex"))) == 2
    log.delete_records_before(2)
    assert [p.name for p in directory.glob("*.txnindex")] == [f"{2:020d}.txnindex"]
    assert log.aborted_transactions(0, 100) == [AbortedTxn(B, 2, 3, 4)]
    assert apply_retention(log) == 1
    assert not list(directory.glob("*.txnindex")) and log.aborted_transactions(0, 100) == []
    log.restart_at(50)
    log.close()


def test_completed_transactions_stay_unstable_until_the_high_watermark_passes_their_marker(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(txn(A, 0), leader_epoch=0)  # 0
    log.append(plain(), leader_epoch=0)  # 1
    log.append(commit(A), leader_epoch=0)  # 2
    assert log.first_unstable_offset is None  # open transactions only
    assert log.producers.first_unstable_offset(high_watermark=2) == 0  # the marker could still be truncated
    assert log.producers.first_unstable_offset(high_watermark=3) is None
    assert log.producers.first_unstable_offset(high_watermark=2) is None  # passed once, forgotten
    log.close()


def _keyed(pid: int, sequence: int, key: bytes, value: bytes) -> bytes:
    return record_batch([(key, value)], producer_id=pid, producer_epoch=0, base_sequence=sequence,
                        transactional=True)


def test_compaction_keeps_markers_and_open_or_aborted_batches_and_never_lets_them_shadow(tmp_path: Path) -> None:
    log = disk(tmp_path)
    log.append(record_batch([(b"k", b"v1")]), leader_epoch=0)  # 0
    log.append(_keyed(A, 0, b"k", b"aborted"), leader_epoch=0)  # 1
    log.append(abort(A), leader_epoch=0)  # 2
    log.append(_keyed(B, 0, b"k", b"open"), leader_epoch=0)  # 3: B's transaction is still open
    log.append(record_batch([(b"j", b"old")]), leader_epoch=0)  # 4
    log.append(_keyed(C, 0, b"j", b"new"), leader_epoch=0)  # 5
    log.append(commit(C), leader_epoch=0)  # 6
    log.roll()
    log.append(record_batch([(b"z", b"tail")]), leader_epoch=0)  # 7, in the active segment
    result = clean(log, delete_retention_ms=0)
    assert result.records_removed == 1  # only j=old, shadowed by C's committed j=new
    abort_key, commit_key, marker_value = struct.pack(">hh", 0, 0), struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0)
    assert contents(log) == [(0, b"k", b"v1"), (1, b"k", b"aborted"), (2, abort_key, marker_value), (3, b"k", b"open"),
                             (5, b"j", b"new"), (6, commit_key, marker_value), (7, b"z", b"tail")]
    assert log.aborted_transactions(0, 100) == [AbortedTxn(A, 1, 2, 3)]  # the index still fits the log
    assert log.first_unstable_offset == 3
    log.close()
