"""Keep a Delta table's `_delta_log` directory short, for a table that takes a commit every few seconds and
whose old versions nobody reads (merge-on-read's change buffer, io/change_buffer.py).

Why Delta's own log cleanup does not do it:
- It keeps every log file until the previous midnight (UTC) minus `delta.logRetentionDuration`
  (`MetadataCleanup.cleanUpExpiredLogs` truncates its cutoff to the day: "We may keep logs beyond this
  duration until the next calendar day"), so a buffer appended to once a second piles up 86,400 commits a day
  whatever its retention.
- It deletes commits and checkpoints only: the version checksums (`<version>.crc`) stay for ever.
- Every snapshot update lists the whole directory on a Hadoop file system (HDFS, the local disk): Delta's
  `HadoopFileSystemLogStore.listFrom` lists the parent and filters (delta-io/delta#1191, #2684). A listing
  of 1,000 log files took 18 ms here and of 4,000 files 93 ms, several listings a micro-batch: merge-on-read's
  micro-batches slowed from 1.5 to 2.7 s over 30 minutes (docs/benchmarks.md, "Issue 22, fifteenth round").

What is deleted is what Delta's cleanup would delete without the day and with the checksums: every log file
of a version before the newest single-file checkpoint that has existed for `guard_seconds`. A snapshot of any
version at or after that checkpoint is built from it and the commits after it (Delta protocol, "Checkpoints");
a reader that listed the log before the checkpoint appeared had `guard_seconds` to read what it listed. Time
travel to the deleted versions is gone, which is why this is for internal tables only.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JError  # type: ignore[import-untyped]

# A log file's version is the first 20 digits of its name; Hadoop's checksum file system (the local disk)
# writes a hidden `.<name>.crc` beside each file.
_VERSIONED = re.compile(r"^\.?(\d{20})\.")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")  # single-file classic checkpoint: written whole


@dataclass(frozen=True)
class LogEntry:
    """A file of `_delta_log`: its name and last modification time (epoch seconds)."""

    name: str
    modified: float


def expired(entries: Iterable[LogEntry], now: float, guard_seconds: float) -> list[str]:
    """The names to delete: files of versions before the newest checkpoint older than `guard_seconds`."""
    listed = list(entries)
    settled = [int(m.group(1)) for e in listed
               if (m := _CHECKPOINT.match(e.name)) and now - e.modified >= guard_seconds]
    if not settled:
        return []
    keep_from = max(settled)
    return [e.name for e in listed if (m := _VERSIONED.match(e.name)) and int(m.group(1)) < keep_from]


def trim_log(spark: Any, table_path: str, guard_seconds: float, now: float | None = None) -> int:
    """Delete the expired files of the Delta table at `table_path` (any Hadoop file system); how many."""
    jvm = spark.sparkContext._jvm
    log_dir = jvm.org.apache.hadoop.fs.Path(f"{table_path.rstrip('/')}/_delta_log")
    fs = log_dir.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(log_dir):
        return 0
    # The raw listing: a checksum file system hides its `.crc` files from listStatus, and deletes them with
    # their file.
    try:
        raw = fs.getRawFileSystem()
    except Py4JError:  # not a checksum file system (HDFS, object stores): it lists everything
        raw = fs
    statuses = raw.listStatus(log_dir)
    entries = [LogEntry(s.getPath().getName(), s.getModificationTime() / 1000) for s in statuses if s.isFile()]
    deleted = 0
    for name in expired(entries, time.time() if now is None else now, guard_seconds):
        if raw.delete(jvm.org.apache.hadoop.fs.Path(log_dir, name), False):
            deleted += 1
    return deleted
