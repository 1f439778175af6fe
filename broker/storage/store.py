"""`LogStore` on disk: one directory `<topic>-<partition>` per partition under the data dir."""

from __future__ import annotations

import shutil
from pathlib import Path

from broker.log_store import LogConfig, PartitionLog
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog


def storage_config(config: LogConfig) -> StorageConfig:
    return StorageConfig(
        segment_bytes=config.segment_bytes,
        max_message_bytes=config.max_message_bytes,
        timestamp_type_log_append=config.timestamp_type_log_append,
    )


class DiskLogStore:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self._logs: dict[tuple[str, int], DiskPartitionLog] = {}

    def _directory(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def open(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            log = DiskPartitionLog(self._directory(topic, partition), storage_config(config))
            self._logs[(topic, partition)] = log
        return log

    def delete(self, topic: str, partition: int) -> None:
        log = self._logs.pop((topic, partition), None)
        if log is not None:
            log.close()
        shutil.rmtree(self._directory(topic, partition), ignore_errors=True)

    def close(self) -> None:
        for log in self._logs.values():
            log.close()
        self._logs.clear()
