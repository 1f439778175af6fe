"""Per-partition storage settings, named after the Kafka topic configs they mirror."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StorageConfig:
    segment_bytes: int = 1 << 30  # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_index_entries: int = (10 * 1024 * 1024) // 8  # segment.index.bytes / entry size
    max_message_bytes: int = 1048588  # max.message.bytes
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms (-1: unlimited)
    retention_bytes: int = -1  # retention.bytes (-1: unlimited)
    flush_messages: int = (1 << 63) - 1  # flush.messages
    flush_ms: int = (1 << 63) - 1  # flush.ms
    fsync_every_append: bool = False  # stronger than Kafka: fsync before acknowledging
    timestamp_type_log_append: bool = False  # message.timestamp.type=LogAppendTime
