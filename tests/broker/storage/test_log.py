"""DiskPartitionLog: offsets, reads as whole batches, timestamps, truncation, restart, bad input."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.log_store import FileRange, ReadResult
from broker.protocol.errors import KafkaApiError
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from broker.storage.retention import apply_retention
from tests.broker.storage.batches import record_batch

SMALL = StorageConfig(segment_bytes=2000, index_interval_bytes=200)


def read_bytes(result: ReadResult) -> bytes:
    out = b""
    for chunk in result.chunks:
        assert isinstance(chunk, FileRange)
        with open(chunk.path, "rb") as handle:
            handle.seek(chunk.position)
            out += handle.read(chunk.size)
    return out


def base_offsets(data: bytes) -> list[int]:
    offsets, position = [], 0
    while position < len(data):
        base, length = struct.unpack_from(">qi", data, position)
        offsets.append(base)
        position += length + 12
    return offsets


def fill(log: DiskPartitionLog, batches: int, per_batch: int = 3) -> None:
    for i in range(batches):
        entries = [(f"k{i}-{j}".encode(), b"v" * 40) for j in range(per_batch)]
        log.append(record_batch(entries, base_timestamp=10_000 + i * 100), leader_epoch=1)


def test_append_assigns_offsets_and_rolls(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, SMALL)
    fill(log, 60)
    assert (log.log_start_offset, log.log_end_offset) == (0, 180)
    assert len(log.segments) > 3
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    assert names[0] == "00000000000000000000.log" and all(len(n) == 24 for n in names)
    assert [s.base_offset for s in log.segments][1:] == [int(n[:20]) for n in names][1:]
    log.close()


def test_read_returns_whole_batches_holding_the_offset(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, SMALL)
    fill(log, 60)
    for offset in (0, 1, 2, 3, 100, 179):
        data = read_bytes(log.read(offset, 1))  # at least one batch even above max_bytes
        assert base_offsets(data) == [offset - offset % 3]
    many = read_bytes(log.read(4, 10_000))
    assert base_offsets(many)[0] == 3 and len(many) <= 10_000 and len(base_offsets(many)) > 1
    assert log.read(180, 100).chunks == ()
    log.close()


def test_offset_for_timestamp_and_max_timestamp(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, SMALL)
    fill(log, 60)
    found = log.offset_for_timestamp(10_000 + 25 * 100 + 1)
    assert found is not None and (found.offset, found.timestamp) == (76, 12_501)
    assert log.offset_for_timestamp(99_999_999) is None
    latest = log.max_timestamp()
    assert latest is not None and latest.offset == 179 and latest.timestamp == 10_000 + 5902
    log.close()


def test_truncate_and_delete_records(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, SMALL)
    fill(log, 60)
    log.truncate_to(90)
    assert log.log_end_offset == 90
    log.append(record_batch([(b"a", b"b")]), leader_epoch=2)
    assert log.log_end_offset == 91
    assert log.delete_records_before(50) == 50
    assert log.read(49, 100).chunks == ()
    assert base_offsets(read_bytes(log.read(50, 1))) == [48]
    log.close()
    reopened = DiskPartitionLog(tmp_path, SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (50, 91)
    assert not reopened.recovered_unclean
    assert reopened.leader_epochs == [(1, 0), (2, 90)]
    reopened.close()


def test_restart_at_drops_everything_and_continues_there(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, SMALL)
    fill(log, 30)  # several segments
    log.restart_at(500)  # a follower whose log ended before the leader's log start
    assert (log.log_start_offset, log.log_end_offset, log.leader_epochs) == (500, 500, [])
    assert log.read(0, 1000).chunks == ()
    log.append(record_batch([(b"a", b"b")]), leader_epoch=3)
    assert log.log_end_offset == 501
    log.close()
    assert sorted(p.name for p in tmp_path.glob("*.log")) == [f"{500:020d}.log"]
    reopened = DiskPartitionLog(tmp_path, SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (500, 501)
    assert reopened.leader_epochs == [(3, 500)]
    reopened.close()


def test_retention_by_bytes_and_time_removes_whole_old_segments(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig(segment_bytes=2000, retention_bytes=4000, retention_ms=-1))
    fill(log, 60)
    before = len(log.segments)
    assert apply_retention(log) > 0
    assert sum(s.size for s in log.segments) >= 4000 - 2000 and len(log.segments) < before
    assert log.log_start_offset == log.segments[0].base_offset
    aged = DiskPartitionLog(tmp_path / "b", StorageConfig(segment_bytes=2000, retention_ms=1000))
    fill(aged, 60)
    assert apply_retention(aged, now_ms=10_000 + 5902 + 1001 - 3000) > 0
    assert apply_retention(aged, now_ms=10**12) == len(aged.segments) - 1 or len(aged.segments) == 1
    assert len(aged.segments) == 1 and aged.log_end_offset == 180  # the active segment stays
    log.close()
    aged.close()


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), ErrorCode.corrupt_message),
        (lambda b: b[:30], ErrorCode.corrupt_message),
        (lambda b: b[:8] + struct.pack(">i", 10**6) + b[12:], ErrorCode.corrupt_message),
        (lambda b: record_batch([(None, b"x" * 3000)]), ErrorCode.message_too_large),
        (lambda b: record_batch([(b"k", b"v")], producer_id=7, producer_epoch=-1, base_sequence=0),
         ErrorCode.invalid_record),
        (lambda b: _recount(b, 5), ErrorCode.invalid_record),
    ],
)
def test_bad_batches_are_rejected_and_nothing_is_written(tmp_path: Path, mutate, code) -> None:  # type: ignore[no-untyped-def]
    log = DiskPartitionLog(tmp_path, StorageConfig(max_message_bytes=2000))
    log.append(record_batch([(b"k", b"v")]), 0)
    size = os.path.getsize(log.segments[-1].path)
    good = record_batch([(b"k", b"v"), (b"k2", b"v2")])
    with pytest.raises(KafkaApiError) as caught:
        log.append(good + mutate(good), 0)  # a valid batch first: it must not be written either
    assert caught.value.code == code
    assert os.path.getsize(log.segments[-1].path) == size and log.log_end_offset == 1
    log.close()


def _recount(batch: bytes, count: int) -> bytes:
    """Claim `count` records; re-CRC so only the count check can catch it."""
    import crc32c

    data = bytearray(batch)
    struct.pack_into(">i", data, 57, count)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def test_empty_append_is_corrupt_message(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig())
    with pytest.raises(KafkaApiError) as caught:
        log.append(b"", 0)
    assert caught.value.code == ErrorCode.corrupt_message and log.log_end_offset == 0
    log.close()


def test_offset_for_timestamp_inside_compressed_batches(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig())
    for i, codec in enumerate(["gzip", "xerial", "lz4", "zstd", "snappy"]):
        entries = [(None, f"{codec}-{j}".encode()) for j in range(10)]
        log.append(record_batch(entries, base_timestamp=1000 * (i + 1), compression=codec), leader_epoch=0)
    for i in range(5):
        found = log.offset_for_timestamp(1000 * (i + 1) + 4)  # the 5th record of batch i
        assert found is not None and (found.offset, found.timestamp) == (10 * i + 4, 1000 * (i + 1) + 4)
    log.close()


def _with_section(batch: bytes, section: bytes, last_offset_delta: int | None = None) -> bytes:
    """Replace the record section (and maybe lastOffsetDelta), fixing length and CRC so only decoding can tell."""
    import crc32c

    data = bytearray(batch[:61]) + section
    struct.pack_into(">i", data, 8, len(data) - 12)
    if last_offset_delta is not None:
        struct.pack_into(">i", data, 23, last_offset_delta)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def test_compressed_batches_are_decoded_before_anything_is_written(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig())
    gzipped = record_batch([(b"k", b"v"), (b"k2", b"v2")], compression="gzip")
    log.append(gzipped, 0)
    size = os.path.getsize(log.segments[-1].path)
    cases = [
        (_with_section(gzipped, b"not gzip at all"), ErrorCode.corrupt_message, "gzip record section"),
        (_with_section(gzipped, gzipped[61:], last_offset_delta=5), ErrorCode.invalid_record, "lastOffsetDelta 5"),
    ]
    for bad, code, words in cases:
        with pytest.raises(KafkaApiError) as caught:
            log.append(gzipped + bad, 0)
        assert caught.value.code == code and words in str(caught.value)
    assert os.path.getsize(log.segments[-1].path) == size and log.log_end_offset == 2
    log.close()
