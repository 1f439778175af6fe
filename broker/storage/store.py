"""`LogStore` on disk: one directory `<topic>-<partition>` per partition under the data dir."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

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


class DiskLogStore:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self._logs: dict[tuple[str, int], DiskPartitionLog] = {}
        self._policies: dict[tuple[str, int], LogConfig] = {}

    def _directory(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def open(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            log = DiskPartitionLog(self._directory(topic, partition), storage_config(config))
            self._logs[(topic, partition)] = log
            self._policies[(topic, partition)] = config
        return log

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
        for log in self._logs.values():
            log.close()
        self._logs.clear()
