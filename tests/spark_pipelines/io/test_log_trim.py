"""The change buffer's own log cleanup (io/log_trim.py): which files go, and through real Delta that a table
trimmed to its newest settled checkpoint reads, appends and merges as before."""

import os
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable

from spark_pipelines.io import change_buffer
from spark_pipelines.io.change_buffer import ChangeBuffer
from spark_pipelines.io.log_trim import LogEntry, expired, trim_log


def _log(versions: range, checkpoints: dict[int, float], now: float) -> list[LogEntry]:
    """A listing of `_delta_log` as a checksum file system shows it raw, every file written `now`."""
    entries = [LogEntry("_last_checkpoint", now), LogEntry("._last_checkpoint.crc", now)]
    for v in versions:
        for name in (f"{v:020d}.json", f"{v:020d}.crc"):
            entries += [LogEntry(name, now), LogEntry(f".{name}.crc", now)]
    for v, written in checkpoints.items():
        entries += [LogEntry(f"{v:020d}.checkpoint.parquet", written),
                    LogEntry(f".{v:020d}.checkpoint.parquet.crc", written)]
    return entries


def _versions(names: list[str]) -> set[int]:
    return {int(name.lstrip(".")[:20]) for name in names}


def test_files_before_the_newest_settled_checkpoint_go_with_their_checksums() -> None:
    now = 1_000_000.0
    entries = _log(range(26), {10: now - 500, 20: now - 200}, now)
    gone = expired(entries, now, guard_seconds=120)
    assert _versions(gone) == set(range(20)), "every version before checkpoint 20, nothing after"
    assert f".{5:020d}.json.crc" in gone and f"{5:020d}.crc" in gone, "checksums of both kinds go too"
    assert f"{10:020d}.checkpoint.parquet" in gone
    assert not {"_last_checkpoint", "._last_checkpoint.crc"} & set(gone)
    assert f"{20:020d}.checkpoint.parquet" not in gone and f"{20:020d}.json" not in gone


def test_a_checkpoint_younger_than_the_guard_protects_what_readers_may_still_list() -> None:
    now = 1_000_000.0
    entries = _log(range(26), {10: now - 500, 20: now - 60}, now)
    assert _versions(expired(entries, now, guard_seconds=120)) == set(range(10)), "only up to the settled one"
    assert expired(_log(range(26), {10: now - 60, 20: now - 30}, now), now, guard_seconds=120) == []
    assert expired(_log(range(8), {}, now), now, guard_seconds=0) == [], "no checkpoint: nothing goes"


def test_only_single_file_checkpoints_count() -> None:
    """A multi-part or V2 checkpoint is not known complete from one file: it never sets the line."""
    now = 1_000_000.0
    entries = [*_log(range(30), {}, now),
               LogEntry(f"{20:020d}.checkpoint.0000000001.0000000002.parquet", now - 999),
               LogEntry(f"{25:020d}.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json", now - 999)]
    assert expired(entries, now, guard_seconds=0) == []


def _listing(path: Path) -> list[str]:
    return sorted(os.listdir(path / "_delta_log"))


def test_a_trimmed_table_reads_and_appends_as_before(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    spark.range(0, 1).write.format("delta").option("delta.checkpointInterval", "5").save(str(path))
    for i in range(1, 23):
        spark.range(i, i + 1).write.format("delta").mode("append").save(str(path))
    before = _listing(path)
    assert trim_log(spark, str(path), guard_seconds=3600) == 0, "checkpoints younger than the guard: nothing"
    assert _listing(path) == before

    deleted = trim_log(spark, str(path), guard_seconds=0)

    after = _listing(path)
    versioned = [name for name in after if name.lstrip(".")[:20].isdigit()]
    assert deleted == len(before) - len(after) > 0
    assert min(_versions(versioned)) == 20, f"the newest checkpoint is version 20: {after}"
    assert f".{19:020d}.json.crc" not in after and f"{19:020d}.crc" not in after
    assert sorted(r.id for r in spark.read.format("delta").load(str(path)).collect()) == list(range(23))
    spark.range(100, 101).write.format("delta").mode("append").save(str(path))
    assert spark.read.format("delta").load(str(path)).count() == 24
    newest = DeltaTable.forPath(spark, str(path)).history().first()
    assert newest is not None and newest["version"] == 23


def test_the_buffer_trims_its_log_on_its_own_cadence(spark: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """ChangeBuffer.trim_log_if_due, with a clock of the test's: nothing before TRIM_EVERY_S, then the buffer's
    pending messages are the same after the trim."""
    monkeypatch.setattr(change_buffer, "TRIM_GUARD_S", 0.0)
    now = [0.0]
    buffer = ChangeBuffer(str(tmp_path / "buffer"), 10, "app", clock=lambda: now[0])
    messages = spark.createDataFrame([(True, False, "shop.users", i) for i in range(3)],
                                     "valid boolean, is_ddl boolean, table string, n int")
    buffer.append(spark, messages, 0)
    spark.sql(f"ALTER TABLE delta.`{buffer.path}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2')")
    for batch in range(1, 8):
        buffer.append(spark, messages, batch)
    before = _listing(Path(buffer.path))
    assert buffer.trim_log_if_due(spark) == 0 and _listing(Path(buffer.path)) == before, "not due yet"

    now[0] += change_buffer.TRIM_EVERY_S
    assert buffer.trim_log_if_due(spark) > 0
    assert buffer.trim_log_if_due(spark) == 0, "due again only TRIM_EVERY_S later"

    pending = buffer.pending(spark, 7)
    assert pending is not None and pending.count() == 24
    buffer.merged(spark, 3)
    remaining = buffer.pending(spark, 7)
    assert remaining is not None and remaining.count() == 12, "the delete after a trim takes batches 0-3 only"
