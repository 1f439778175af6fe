"""Delete-policy retention: whole segments only, by age (retention.ms) and size (retention.bytes)."""

from __future__ import annotations

import time

from broker.storage.log import DiskPartitionLog


def apply_retention(log: DiskPartitionLog, now_ms: int | None = None) -> int:
    """Delete expired leading segments; returns how many. Never the active segment, never a segment
    holding offsets at or beyond the high watermark (consumers may not have seen them)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    with log.lock:  # decided and applied at once: an append may roll a segment meanwhile (maintenance thread)
        return 0 if log.closed else _apply(log, now)


def _apply(log: DiskPartitionLog, now: int) -> int:
    config = log.config
    segments = log.segments
    total = sum(s.size for s in segments)
    count = 0
    for segment in segments[:-1]:
        if segment.next_offset > log.high_watermark:
            break
        too_old = config.retention_ms >= 0 and segment.max_timestamp >= 0 and (
            now - segment.max_timestamp > config.retention_ms)
        too_big = config.retention_bytes >= 0 and total - segment.size >= config.retention_bytes
        if not (too_old or too_big):
            break
        total -= segment.size
        count += 1
    if count:
        log.delete_segments(count)
    return count
