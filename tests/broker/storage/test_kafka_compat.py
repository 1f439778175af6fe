"""Segment files are Kafka's: the reference's files read by our storage and dumped by our tool the same
way kafka-dump-log dumps them; our files dumped identically by kafka-dump-log."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.protocol import records
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from lakefeed_testing.kafka_reference import KafkaReference, run_kafka_tool
from tests.broker.storage.batches import record_batch
from tests.broker.storage.test_log import read_bytes
from tests.broker.storage.test_transactions import A, B, abort, commit, plain, txn

pytestmark = pytest.mark.integration


def kafka_dump(files: list[Path], *flags: str) -> list[str]:
    result = run_kafka_tool("kafka-dump-log", "--files", ",".join(map(str, files)), *flags)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


def our_dump(files: list[Path], *flags: str) -> list[str]:
    command = [sys.executable, "-m", "broker.cli", "dump-log-segments", "--files", ",".join(map(str, files)), *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def segment_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in (".log", ".index", ".timeindex"))


def test_reference_segments_are_read_and_dumped_by_us(kafka: KafkaReference, tmp_path: Path) -> None:
    topic = f"compat-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "1048576"})])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 20, "compression.type": "none"})
    count = 2500
    for i in range(count):
        key = None if i % 10 == 0 else f"key-{i}".encode()
        producer.produce(topic, key=key, value=f"value-{i}-".encode() + b"x" * 1000,
                         headers=[("h1", b"a"), ("h2", b"b")] if i % 3 == 0 else None, timestamp=1_700_000_000_000 + i)
        producer.poll(0)
    assert producer.flush(30) == 0
    source = kafka.data_dir / f"{topic}-0"
    copy = tmp_path / f"{topic}-0"
    time.sleep(1)
    shutil.copytree(source, copy)  # never touch the live reference's files
    files = segment_files(copy)
    assert len([p for p in files if p.suffix == ".log"]) >= 2

    log = DiskPartitionLog(copy, StorageConfig())  # no marker of ours: full recovery of Kafka's files
    assert log.log_end_offset == count
    offset, seen = 0, 0
    while offset < count:
        data = read_bytes(log.read(offset, 1 << 20))
        headers = list(records.iter_batches(data))  # CRCs verified again here
        assert headers[0].base_offset <= offset <= headers[0].base_offset + headers[0].last_offset_delta
        seen += sum(h.record_count for h in headers if h.base_offset >= offset)
        offset = headers[-1].base_offset + headers[-1].last_offset_delta + 1
    assert seen == count - 0 and offset == count
    found = log.offset_for_timestamp(1_700_000_000_000 + 1234)
    assert found is not None and found.offset == 1234
    log.close()

    pristine = tmp_path / "pristine"
    shutil.copytree(source, pristine)
    files = segment_files(pristine)
    for flags in ((), ("--deep-iteration",), ("--print-data-log",)):
        assert our_dump(files, *flags) == kafka_dump(files, *flags)


def test_our_segments_are_dumped_identically_by_kafka(kafka: KafkaReference, tmp_path: Path) -> None:
    del kafka  # the reference's jars are what matter here; the fixture makes sure they are present
    log = DiskPartitionLog(tmp_path, StorageConfig(segment_bytes=4000, index_interval_bytes=300))
    for i in range(80):
        entries = [(None if j == 0 else f"k{i}-{j}".encode(), f"value {i} {j}".encode() * 5) for j in range(4)]
        log.append(record_batch(entries, base_timestamp=1_600_000_000_000 + i * 1000), leader_epoch=i // 20)
    log.close()
    files = segment_files(tmp_path)
    assert len([p for p in files if p.suffix == ".log"]) >= 3
    kafka_lines = kafka_dump(files, "--print-data-log")
    assert any(line.startswith("| offset: 319 ") for line in kafka_lines)
    assert not any("isvalid: false" in line for line in kafka_lines)
    assert our_dump(files, "--print-data-log") == kafka_lines
    assert our_dump(files) == kafka_dump(files)


def test_our_compressed_segments_are_dumped_identically_by_kafka(kafka: KafkaReference, tmp_path: Path) -> None:
    del kafka
    log = DiskPartitionLog(tmp_path, StorageConfig())
    codecs = ["gzip", "snappy", "xerial", "lz4", "zstd", "none"]
    for i, codec in enumerate(codecs):
        entries = [(f"key-{codec}-{j}".encode(), f"{codec} value {j} ".encode() * 8) for j in range(5)]
        log.append(record_batch(entries, base_timestamp=1_600_000_000_000 + i, compression=codec), leader_epoch=0)
    log.close()
    files = segment_files(tmp_path)
    kafka_lines = kafka_dump(files, "--deep-iteration", "--print-data-log")
    assert sum(line.startswith("| offset: ") for line in kafka_lines) == 5 * len(codecs)
    assert "payload: zstd value 4 zstd value 4" in "\n".join(kafka_lines)
    assert our_dump(files, "--deep-iteration", "--print-data-log") == kafka_lines


def test_reference_compressed_segments_are_read_and_dumped_by_us(kafka: KafkaReference, tmp_path: Path) -> None:
    topic = f"compat-compressed-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    per_codec = 200
    for c, codec in enumerate(codecs):  # librdkafka writes raw snappy and independent-block LZ4 frames
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 50, "compression.type": codec})
        for i in range(per_codec):
            n = c * per_codec + i
            producer.produce(topic, key=f"key-{n}".encode(), value=f"{codec} value {n} ".encode() * 10,
                             timestamp=1_700_000_000_000 + n)
        assert producer.flush(30) == 0
    time.sleep(1)
    copy = tmp_path / f"{topic}-0"
    shutil.copytree(kafka.data_dir / f"{topic}-0", copy)
    files = segment_files(copy)
    kafka_lines = kafka_dump(files, "--print-data-log")
    assert {f"compresscodec: {codec}" in "\n".join(kafka_lines) for codec in codecs} == {True}
    assert our_dump(files, "--print-data-log") == kafka_lines

    log = DiskPartitionLog(copy, StorageConfig())
    assert log.log_end_offset == per_codec * len(codecs)
    for n in (5, 333, 777):  # inside gzip, snappy and zstd batches
        found = log.offset_for_timestamp(1_700_000_000_000 + n)
        assert found is not None and (found.offset, found.timestamp) == (n, 1_700_000_000_000 + n)
    log.close()


def test_our_producer_snapshots_are_read_by_kafka_and_dumped_identically(kafka: KafkaReference, tmp_path: Path) -> None:
    del kafka
    log = DiskPartitionLog(tmp_path, StorageConfig())
    for pid, seq in ((7, 0), (8, 0), (7, 3)):
        log.append(record_batch([(b"k", b"v")] * 3, base_timestamp=1_600_000_000_000 + seq,
                                producer_id=pid, producer_epoch=2, base_sequence=seq), leader_epoch=0)
    log.close()
    snapshot = tmp_path / f"{9:020d}.snapshot"
    lines = [line for line in kafka_dump([snapshot]) if line.startswith("producerId:")]
    assert len(lines) == 2, lines
    seven = next(line for line in lines if line.startswith("producerId: 7 "))
    for fact in ("producerEpoch: 2", "lastSequence: 5", "lastOffset: 8", "offsetDelta: 2", "timestamp: 1600000000005"):
        assert fact in seven, seven
    assert our_dump([snapshot]) == kafka_dump([snapshot])


def test_our_transaction_files_are_dumped_identically_by_kafka(tmp_path: Path) -> None:
    """Markers in the log, the .txnindex and a snapshot with an open transaction and a bumped epoch: only
    Kafka's tool is needed (run_kafka_tool fetches its jars), not a reference broker."""
    log = DiskPartitionLog(tmp_path, StorageConfig())
    for data in (txn(A, 0, 2), txn(B, 0), plain(), abort(A, coordinator_epoch=4), txn(A, 2),
                 commit(B, coordinator_epoch=4), abort(A, epoch=1, coordinator_epoch=5), txn(B, 1)):
        log.append(data, leader_epoch=2)
    log.close()
    files = [tmp_path / f"{0:020d}.log", tmp_path / f"{0:020d}.txnindex", tmp_path / f"{9:020d}.snapshot"]
    kafka_lines = kafka_dump(files, "--print-data-log")
    assert "| offset: 4 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker:" \
        " ABORT coordinatorEpoch: 4" in kafka_lines
    assert "version: 0 producerId: 7 firstOffset: 0 lastOffset: 4 lastStableOffset: 2" in kafka_lines
    assert "version: 0 producerId: 7 firstOffset: 5 lastOffset: 7 lastStableOffset: 8" in kafka_lines
    assert any(line.startswith("producerId: 8 ") and "currentTxnFirstOffset: OptionalLong[8]" in line
               for line in kafka_lines), kafka_lines
    assert our_dump(files, "--print-data-log") == kafka_lines
    assert our_dump(files, "--deep-iteration") == kafka_dump(files, "--deep-iteration")
