"""Compaction keeps the latest record per key; tombstones go only after delete.retention.ms."""

from __future__ import annotations

from pathlib import Path

from broker.storage.cleaner import clean
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from tests.broker.storage.batches import record_batch
from tests.broker.storage.test_properties import contents


def test_compaction_and_tombstones(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig(segment_bytes=300))
    for i in range(20):
        log.append(record_batch([(f"k{i % 3}".encode(), f"v{i}".encode())], base_timestamp=1000 + i), 0)
    log.append(record_batch([(b"k0", None)], base_timestamp=2000), 0)  # tombstone for k0 at offset 20
    for i in range(4):
        log.append(record_batch([(b"other", b"x")], base_timestamp=3000 + i), 0)
    log.roll()
    log.append(record_batch([(b"tail", b"t")], base_timestamp=4000), 0)

    result = clean(log, delete_retention_ms=10_000, now_ms=5000)  # tombstone still young: kept
    assert result.records_removed > 0
    kept = {(k, v) for _, k, v in contents(log)}
    assert kept == {(b"k1", b"v19"), (b"k2", b"v17"), (b"k0", None), (b"other", b"x"), (b"tail", b"t")}
    offsets = [o for o, _, _ in contents(log)]
    assert offsets == sorted(offsets) and offsets[-1] == 25  # offsets never change

    clean(log, delete_retention_ms=10_000, now_ms=2000 + 10_001)
    assert (b"k0", None) not in {(k, v) for _, k, v in contents(log)}
    log.close()
    reopened = DiskPartitionLog(tmp_path, StorageConfig(segment_bytes=300))
    assert [k for _, k, _ in contents(reopened)] == [b"k2", b"k1", b"other", b"tail"]
    reopened.close()


def test_compaction_decodes_compressed_batches(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig(segment_bytes=300))
    for i, codec in enumerate(["gzip", "xerial", "lz4", "zstd", "snappy"]):
        entries = [(b"a", f"a{i}".encode()), (f"only-{codec}".encode(), b"x"), (b"b", f"b{i}".encode())]
        log.append(record_batch(entries, base_timestamp=1000 + i, compression=codec), 0)
    log.roll()
    log.append(record_batch([(b"tail", b"t")], base_timestamp=4000), 0)
    result = clean(log, delete_retention_ms=10_000, now_ms=5000)
    assert result.records_removed == 8  # a0..a3 and b0..b3 are superseded by the last batch
    survivors = contents(log)
    assert [k for _, k, _ in survivors if k in (b"a", b"b")] == [b"a", b"b"]
    assert {(k, v) for _, k, v in survivors if k in (b"a", b"b")} == {(b"a", b"a4"), (b"b", b"b4")}
    assert len([k for _, k, _ in survivors if k is not None and k.startswith(b"only-")]) == 5
    log.close()
