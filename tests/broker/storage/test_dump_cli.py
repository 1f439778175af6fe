"""`broker dump-log-segments`: damaged tails are reported, bad arguments name the problem."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from broker.cli import main
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from tests.broker.storage.batches import record_batch


def test_dump_reports_trailing_garbage_and_rejects_unknown_files(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path, StorageConfig())
    log.append(record_batch([(b"k", b"v")]), 0)
    log.close()
    segment = tmp_path / f"{0:020d}.log"
    with segment.open("ab") as handle:
        handle.write(b"junk")
    result = CliRunner().invoke(main, ["dump-log-segments", "--files", str(segment), "--deep-iteration"])
    assert result.exit_code == 0, result.output
    assert "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1" in result.output
    assert result.output.rstrip().endswith(f"Found 4 invalid bytes at the end of {segment.name}")

    bad = CliRunner().invoke(main, ["dump-log-segments", "--files", str(tmp_path / "leader-epoch-checkpoint")])
    assert bad.exit_code == 1 and "expected a segment file named" in bad.output
    missing = CliRunner().invoke(main, ["dump-log-segments", "--files", str(tmp_path / f"{5:020d}.log")])
    assert missing.exit_code == 1 and "No such file" in missing.output


def test_dump_rejects_a_corrupt_snapshot(tmp_path: Path) -> None:
    snapshot = tmp_path / f"{3:020d}.snapshot"
    snapshot.write_bytes(b"\x00\x01" + b"\x00" * 8)  # version 1, CRC 0: wrong
    result = CliRunner().invoke(main, ["dump-log-segments", "--files", str(snapshot)])
    assert result.exit_code == 1 and "not a producer-state snapshot" in result.output
