"""One line per micro-batch, from Spark's progress report (StreamingQueryProgress: batchId, durationMs,
the Kafka source's endOffset and latestOffset, see the Structured Streaming guide, "Monitoring
Streaming Queries") joined with what the batch function applied (jobs/apply.BatchReport)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spark_pipelines.jobs.apply import BatchReport


@dataclass(frozen=True)
class BatchLine:
    batch_id: int
    rows: tuple[tuple[str, int], ...]  # (source table, row changes)
    offsets_behind: tuple[tuple[str, int], ...]  # (topic, records after the batch's end offsets)
    duration_s: float
    newest_commit_ms: int | None
    ended_s: float  # Unix time

    def freshness_s(self, now: float | None = None) -> float | None:
        if self.newest_commit_ms is None:
            return None
        return max(0.0, (now if now is not None else time.time()) - self.newest_commit_ms / 1000)

    def text(self) -> str:
        rows = ", ".join(f"{table} +{count}" for table, count in self.rows) or "no rows"
        behind = ", ".join(f"{topic} {count}" for topic, count in self.offsets_behind) or "-"
        fresh = self.freshness_s(self.ended_s)
        freshness = "-" if fresh is None else f"{fresh:.1f} s"
        return (f"batch {self.batch_id}: {rows} | offsets behind: {behind} | {self.duration_s:.1f} s | "
                f"freshness {freshness}")

    def fields(self) -> dict[str, Any]:
        """The line as the JSON log's extra fields."""
        return {"batch_id": self.batch_id, "rows": dict(self.rows), "offsets_behind": dict(self.offsets_behind),
                "duration_s": round(self.duration_s, 3), "freshness_s": self.freshness_s(self.ended_s)}


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("{") else {}
    return value if isinstance(value, dict) else {}


def offsets_behind(progress: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """Per topic: latestOffset - endOffset summed over its partitions (Spark's Kafka source reports both
    as {"topic": {"partition": offset}})."""
    behind: dict[str, int] = {}
    for source in progress.get("sources") or []:
        latest, end = _offsets(source.get("latestOffset")), _offsets(source.get("endOffset"))
        for topic, partitions in latest.items():
            done = end.get(topic, {})
            behind[topic] = behind.get(topic, 0) + sum(
                max(0, int(offset) - int(done.get(partition, 0))) for partition, offset in partitions.items())
    return tuple(sorted(behind.items()))


def batch_line(progress: dict[str, Any], report: BatchReport | None) -> BatchLine:
    ended = progress.get("timestamp")
    duration = (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000
    try:
        ended_s = datetime.fromisoformat(str(ended).replace("Z", "+00:00")).timestamp() + duration
    except ValueError:
        ended_s = time.time()
    return BatchLine(int(progress["batchId"]), report.rows if report else (), offsets_behind(progress),
                     duration, report.newest_commit_ms if report else None, ended_s)


class StatusLine:
    """`--progress`: one status line on stderr, rewritten in place (carriage return, erase line)."""

    def __init__(self) -> None:
        self.shown = False

    def show(self, text: str) -> None:
        sys.stderr.write("\r\x1b[K" + text)
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False
