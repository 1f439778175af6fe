"""Fault injection: after damage, reopening keeps every valid batch before it, nothing after, never raises."""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from broker.storage.config import StorageConfig
from broker.storage.log import CLEAN_SHUTDOWN, DiskPartitionLog
from broker.storage.segment import scan
from tests.broker.storage.batches import record_batch
from tests.broker.storage.test_log import base_offsets, fill, read_bytes

CONFIG = StorageConfig(segment_bytes=2000, index_interval_bytes=200)


def crashed_log(tmp_path: Path) -> DiskPartitionLog:
    """60 batches of 3 records, then a crash: file handles dropped, no flush, no clean-shutdown marker."""
    log = DiskPartitionLog(tmp_path, CONFIG)
    fill(log, 60)
    for segment in log.segments:
        segment.close()
    assert not (tmp_path / CLEAN_SHUTDOWN).exists()
    return log


def all_batches(log: DiskPartitionLog) -> list[int]:
    out: list[int] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = read_bytes(log.read(offset, 1 << 20))
        bases = base_offsets(data)
        out += bases
        offset = bases[-1] + 3
    return out


def last_segment(path: Path) -> Path:
    return sorted(path.glob("*.log"))[-1]


def test_truncated_tail(tmp_path: Path) -> None:
    crashed_log(tmp_path)
    tail = last_segment(tmp_path)
    os.truncate(tail, tail.stat().st_size - 5)
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert log.recovered_unclean and log.log_end_offset == 177
    assert all_batches(log) == list(range(0, 177, 3))
    log.append(record_batch([(b"k", b"v")]), 1)  # appends continue right after the last good batch
    assert log.log_end_offset == 178
    log.close()


def test_random_garbage_appended(tmp_path: Path) -> None:
    crashed_log(tmp_path)
    with last_segment(tmp_path).open("ab") as handle:
        handle.write(random.Random(7).randbytes(500))
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert log.log_end_offset == 180 and all_batches(log) == list(range(0, 180, 3))
    log.close()


def test_flipped_crc_bit_mid_file_drops_that_batch_and_everything_after(tmp_path: Path) -> None:
    crashed_log(tmp_path)
    # Like Kafka, recovery re-validates from the recovery point (the last roll): damage in the active segment.
    segments = sorted(tmp_path.glob("*.log"))
    victim = segments[-1]
    data = bytearray(victim.read_bytes())
    first_base = int(victim.stem)
    sizes = len(record_batch([(b"k0-0", b"v" * 40)] * 3))  # all batches here have the same size
    position = 2 * sizes + 17  # CRC field of the third batch in the segment
    data[position] ^= 0x10
    victim.write_bytes(bytes(data))
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert log.log_end_offset == first_base + 6
    assert all_batches(log) == list(range(0, first_base + 6, 3))
    log.close()


def _third_batch(tmp_path: Path) -> tuple[Path, int, int]:
    """A crashed log's last segment, its base offset and the byte position of its third batch."""
    crashed_log(tmp_path)
    victim = sorted(tmp_path.glob("*.log"))[-1]
    fd = os.open(victim, os.O_RDONLY)
    try:
        positions = [h.position for h in scan(fd, 0, victim.stat().st_size, verify=True)]
    finally:
        os.close(fd)
    return victim, int(victim.stem), positions[2]


@pytest.mark.parametrize("flip", [0x01, 0x80], ids=["high-byte-low-bit", "sign-bit"])
def test_a_flipped_base_offset_drops_that_batch_and_everything_after(tmp_path: Path, flip: int) -> None:
    """The CRC does not cover a batch's base offset: a flipped bit there passed recovery and left a hole in the log
    (found by the seeded nemesis: a damaged replica led without one acknowledged write its peers had)."""
    victim, first_base, third = _third_batch(tmp_path)
    data = bytearray(victim.read_bytes())
    data[third] ^= flip  # the first byte of the third batch's base offset: far out of range, or negative
    victim.write_bytes(bytes(data))
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert log.recovered_unclean and log.log_end_offset == first_base + 6
    assert all_batches(log) == list(range(0, first_base + 6, 3))
    log.close()


def test_a_base_offset_going_backwards_drops_that_batch_and_everything_after(tmp_path: Path) -> None:
    victim, first_base, third = _third_batch(tmp_path)
    data = bytearray(victim.read_bytes())
    struct.pack_into(">q", data, third, first_base + 4)  # inside the batch before it
    victim.write_bytes(bytes(data))
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert log.log_end_offset == first_base + 6
    log.close()


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate"])
def test_missing_or_corrupt_index_files_are_rebuilt(tmp_path: Path, damage: str) -> None:
    log = DiskPartitionLog(tmp_path, CONFIG)
    fill(log, 60)
    log.close()  # clean shutdown: the marker alone would skip recovery
    expected = {p.name: p.read_bytes() for p in tmp_path.glob("*index")}
    for path in tmp_path.glob("*index"):
        if damage == "delete":
            path.unlink()
        elif damage == "garbage":
            path.write_bytes(b"\xff" * 40)
        else:
            path.write_bytes(path.read_bytes()[:-3])
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert all_batches(log) == list(range(0, 180, 3))
    log.close()
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*index")} == expected



def test_unclean_reopen_leaves_intact_indexes_in_place(tmp_path: Path) -> None:
    """After a crash every segment is walked (CRCs checked), but indexes that already match are not rewritten:
    two temp files and renames per segment were most of a 1,000-partition recovery (bench/restart.py)."""
    log = DiskPartitionLog(tmp_path, CONFIG)
    fill(log, 60)
    log.close()
    (tmp_path / CLEAN_SHUTDOWN).unlink()  # as after kill -9 once everything had reached the disk
    before = {p.name: (p.stat().st_ino, p.read_bytes()) for p in tmp_path.glob("*index")}
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert log.recovered_unclean
    assert all_batches(log) == list(range(0, 180, 3))
    assert {p.name: (p.stat().st_ino, p.read_bytes()) for p in tmp_path.glob("*index")} == before
    log.close()


RollCrash = Callable[[Path, int], None]


def _only_index(directory: Path, base: int) -> None:
    (directory / f"{base:020d}.index").write_bytes(b"")


def _empty_log(directory: Path, base: int) -> None:
    (directory / f"{base:020d}.log").write_bytes(b"")


def _half_checkpoint(directory: Path, base: int) -> None:
    (directory / "partition-state-checkpoint.tmp").write_text("0\n3\nrecovery-poi")


@pytest.mark.parametrize("crash", [_only_index, _empty_log, _half_checkpoint])
def test_crash_between_roll_steps(tmp_path: Path, crash: RollCrash) -> None:
    crashed_log(tmp_path)
    crash(tmp_path, 180)
    log = DiskPartitionLog(tmp_path, CONFIG)
    assert all_batches(log) == list(range(0, 180, 3))
    log.append(record_batch([(b"k", b"v")]), 1)
    assert log.log_end_offset == 181
    log.close()
    assert not list(tmp_path.glob("*.tmp"))


def test_random_damage_never_raises(tmp_path: Path) -> None:
    rng = random.Random(11)
    for round_ in range(15):
        directory = tmp_path / str(round_)
        crashed_log(directory)
        files = sorted(directory.iterdir())
        victim = rng.choice(files)
        data = bytearray(victim.read_bytes())
        if data:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        victim.write_bytes(bytes(data[: rng.randint(0, len(data))]))
        log = DiskPartitionLog(directory, CONFIG)  # must not raise
        bases = all_batches(log)
        assert bases == list(range(log.log_start_offset - log.log_start_offset % 3, log.log_end_offset, 3))
        log.close()


def test_damage_before_later_segments_removes_them_when_unflushed(tmp_path: Path) -> None:
    crashed_log(tmp_path)
    (tmp_path / "partition-state-checkpoint").unlink()  # no recovery point: everything is re-validated
    segments = sorted(tmp_path.glob("*.log"))
    data = bytearray(segments[1].read_bytes())
    data[len(data) // 2] ^= 0x01
    segments[1].write_bytes(bytes(data))
    log = DiskPartitionLog(tmp_path, CONFIG)
    first_base = int(segments[1].stem)
    assert first_base < log.log_end_offset < int(segments[2].stem)
    assert all_batches(log) == list(range(0, log.log_end_offset, 3))
    assert not any(p.exists() for p in segments[2:])
    log.close()


def _crash(log: DiskPartitionLog) -> None:
    for segment in log.segments:
        segment.close()


@pytest.mark.parametrize("flushed_first", [False, True])
def test_epochs_of_batches_past_the_recovery_point_are_rebuilt_after_a_crash(tmp_path: Path,
                                                                             flushed_first: bool) -> None:
    """A new epoch reaches the epoch file only with the log's next checkpoint (no fsync on the produce path),
    so after a crash recovery takes the rest from the batches themselves, as Kafka's LogSegment.recover
    does. Losing one would make OffsetForLeaderEpoch answer a follower wrongly, and it truncate wrongly."""
    log = DiskPartitionLog(tmp_path, CONFIG)
    for _ in range(30):
        log.append(record_batch([(b"k", b"v")] * 3), leader_epoch=1)
    if flushed_first:
        log.flush()  # recovery point at 90, epoch file [(1, 0)]
    epoch_file = (tmp_path / "leader-epoch-checkpoint").read_bytes()
    for epoch in (4, 4, 7, 9, 9):
        log.append(record_batch([(b"k", b"v")] * 3), leader_epoch=epoch)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == epoch_file  # nothing written on append
    expected = [(1, 0), (4, 90), (7, 96), (9, 99)]
    assert log.leader_epochs == expected
    _crash(log)
    reopened = DiskPartitionLog(tmp_path, CONFIG)
    assert reopened.recovered_unclean
    assert reopened.leader_epochs == expected
    reopened.close()
    assert DiskPartitionLog(tmp_path, CONFIG).leader_epochs == expected  # and written by the clean close


def test_epochs_cut_with_their_batches_by_recovery_are_dropped(tmp_path: Path) -> None:
    """Epochs the file names past the recovered log end went with their batches."""
    log = DiskPartitionLog(tmp_path, CONFIG)
    for epoch in (1, 1, 2, 3):
        log.append(record_batch([(b"k", b"v")] * 3), leader_epoch=epoch)
    log.flush()  # epoch file [(1, 0), (2, 6), (3, 9)]
    _crash(log)
    segment = last_segment(tmp_path)
    os.truncate(segment, segment.stat().st_size - 5)  # the epoch-3 batch is cut
    reopened = DiskPartitionLog(tmp_path, CONFIG)
    assert reopened.log_end_offset == 9
    assert reopened.leader_epochs == [(1, 0), (2, 6)]
    reopened.close()
