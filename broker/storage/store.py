"""`LogStore` on disk: one directory `<topic>-<partition>` per partition under the data dir.

The store holds an exclusive `flock` on `<data dir>/.lock` while it is open, as Apache Kafka's
LogManager locks `.lock` in each log dir: a second broker on the same directory stops at start-up
instead of writing the same segments. The kernel drops the lock when the process dies, so a crash
never leaves a stale lock behind.

Threads (so that recovery, fsync and compaction never hold up requests on the event loop):
- `open_all` opens and recovers many logs at start-up in a pool sized to the machine's cores, like Kafka's
  `LogManager.loadLogs` (`num.recovery.threads.per.data.dir`);
- one flusher thread fsyncs segments as they roll (`DiskPartitionLog.flush_sealed`);
- `maintain` (retention and compaction) is meant to run in a worker thread; each log's lock makes its
  changes atomic with respect to appends.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker.config import ConfigError
from broker.log_store import LogConfig, PartitionLog
from broker.storage.cleaner import clean
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from broker.storage.retention import apply_retention

_log = logging.getLogger("broker.storage")


def storage_config(config: LogConfig) -> StorageConfig:
    return StorageConfig(
        segment_bytes=config.segment_bytes,
        segment_ms=config.segment_ms,
        max_message_bytes=config.max_message_bytes,
        retention_ms=config.retention_ms,
        retention_bytes=config.retention_bytes,
        flush_messages=config.flush_messages,
        flush_ms=config.flush_ms,
        timestamp_type_log_append=config.timestamp_type_log_append,
    )


class DataDirError(ConfigError):
    """The data directory cannot be created or opened, or another broker holds its lock."""


LOCK_FILE = ".lock"


def lock_data_dir(data_dir: Path) -> int:
    """Create `data_dir` if needed and lock it; returns the lock's file descriptor (closing it unlocks)."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise DataDirError(f"cannot use data dir {data_dir}: {exc.strerror or exc}; pass a writable --data-dir"
                           " (log.dirs)") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise DataDirError(f"data dir {data_dir} is in use by another broker process (it holds"
                           f" {data_dir / LOCK_FILE}); stop that broker or pass another --data-dir",
                           retriable=True) from None
    return fd


class DiskLogStore:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._lock_fd: int | None = lock_data_dir(data_dir)
        self._logs: dict[tuple[str, int], DiskPartitionLog] = {}
        self._policies: dict[tuple[str, int], LogConfig] = {}
        self._flusher = ThreadPoolExecutor(1, thread_name_prefix="log-flusher")

    def _directory(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def open(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            log = self._register(topic, partition, config, self._load(topic, partition, config))
        return log

    def _load(self, topic: str, partition: int, config: LogConfig) -> DiskPartitionLog:
        return DiskPartitionLog(self._directory(topic, partition), storage_config(config))

    def _register(self, topic: str, partition: int, config: LogConfig, log: DiskPartitionLog) -> DiskPartitionLog:
        log.background = self._flusher.submit
        self._logs[(topic, partition)] = log
        self._policies[(topic, partition)] = config
        return log

    def open_all(
        self, partitions: Iterable[tuple[str, int, LogConfig]], workers: int | None = None
    ) -> dict[tuple[str, int], PartitionLog]:
        """Open every given log at once, recovering them in parallel (one thread per core by default)."""
        items = list(partitions)
        wanted = [(t, p, c) for t, p, c in items if (t, p) not in self._logs]
        if wanted:
            with ThreadPoolExecutor(workers or os.cpu_count() or 1, thread_name_prefix="log-loader") as pool:
                loaded = list(pool.map(lambda item: self._load(*item), wanted))
            for (topic, partition, config), log in zip(wanted, loaded, strict=True):
                self._register(topic, partition, config, log)
        return {(t, p): self._logs[(t, p)] for t, p, _ in items}

    def reconfigure(self, topic: str, partition: int, config: LogConfig) -> None:
        """New topic configs (AlterConfigs) for an open log: later appends, rolls and maintenance use them."""
        log = self._logs.get((topic, partition))
        if log is not None:
            log.config = storage_config(config)
            self._policies[(topic, partition)] = config

    def maintain(self, now_ms: int | None = None) -> None:
        for key, log in list(self._logs.items()):
            config = self._policies[key]
            if "compact" in config.cleanup_policy:
                result = clean(log, config.delete_retention_ms, now_ms)
                if result.records_removed:
                    _log.info("compacted %s-%d: %d records removed", key[0], key[1], result.records_removed)
            if "delete" in config.cleanup_policy:
                deleted = apply_retention(log, now_ms)
                if deleted:
                    _log.info("retention deleted %d segment(s) of %s-%d; log start offset %d", deleted, key[0],
                              key[1], log.log_start_offset)

    def delete(self, topic: str, partition: int) -> None:
        log = self._logs.pop((topic, partition), None)
        self._policies.pop((topic, partition), None)
        if log is not None:
            log.close()
        shutil.rmtree(self._directory(topic, partition), ignore_errors=True)

    def close(self) -> None:
        self._flusher.shutdown(wait=True)  # rolled segments reach the disk before the clean-shutdown marker
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None
