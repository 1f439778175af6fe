"""A running changefeed, as the owner loop sees it, and the adapter that runs one in a thread.

The owner only needs `FeedRunner`: start, stop within a second, the acknowledged checkpoint, stats,
the error that ended it, and whether its target was reached. `PipelineRunner` puts the one
capture -> delivery -> Kafka sink pipeline (`changefeed.runner.Changefeed`) behind that interface;
tests plug in a fake by implementing the same Protocol.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from changefeed.config import ChangefeedConfig
from changefeed.errors import SourceConnectionError
from changefeed.lifecycle.source_uri import parse_source_uri, source_database
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import CaptureOptions
from changefeed.source.snapshot import SnapshotProgress


@dataclass(frozen=True)
class RunGauges:
    """What a running changefeed looks like right now, for the server's metrics."""

    source_connected: bool
    memory_used_bytes: int
    memory_quota_bytes: int
    snapshot: tuple[SnapshotProgress, ...] = ()


class FeedRunner(Protocol):
    def start(self) -> None: ...

    def stop(self, timeout: float = 1.0) -> None:
        """Cancel everything (capture, retries, producer); returns within about `timeout` seconds."""
        ...

    @property
    def checkpoint(self) -> Checkpoint | None: ...

    @property
    def error(self) -> BaseException | None: ...

    @property
    def finished(self) -> bool: ...

    @property
    def ready_since(self) -> float | None:
        """Monotonic time at which source and sink were both reached (None: still setting up)."""
        ...

    def stats(self) -> dict[str, dict[str, int]]:
        """Cumulative {"schema.table": {"rows": n, "bytes": n}} since start."""
        ...

    def gauges(self) -> RunGauges: ...


@dataclass(frozen=True)
class RunSpec:
    changefeed_id: str
    source: str
    sink_uri: str
    config: ChangefeedConfig
    start: Checkpoint
    target_ts: int | None
    metadata_url: str  # schema history lives beside the changefeed's other metadata
    delivery_timeout_ms: int = 30_000
    # Told each message's send-to-acknowledgement seconds (the server's delivery latency histogram).
    on_delivery_latency: Callable[[float], None] | None = field(default=None, compare=False)


class PipelineRunner:
    """`FeedRunner` over `changefeed.runner.Changefeed`, the one capture -> sink pipeline.

    The owner does the retrying (warning state, backoff, stuck limit) and persists the checkpoint in
    its metadata store, so the feed runs one attempt (max_retries=0) with an in-memory checkpoint store,
    and checks its topics in its own thread: an unreachable broker must not block the owner loop.
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self._feed: Changefeed | None = None
        self._error: BaseException | None = None  # the spec itself was unusable (bad URI)
        try:
            self._feed = Changefeed(ChangefeedSpec(
                spec.changefeed_id, parse_source_uri(spec.source), spec.sink_uri,
                capture=CaptureOptions(
                    server_id=1_000_000 + zlib.crc32(spec.changefeed_id.encode()) % 1_000_000_000,
                    snapshot_mode=spec.config.snapshot_mode,
                    change_filter=spec.config.change_filter(source_database(spec.source)),
                    schema_store_url=spec.metadata_url, changefeed_id=spec.changefeed_id),
                rules=spec.config.sink.dispatchers, start=spec.start, target_ts=spec.target_ts,
                sink_options=spec.config.sink, max_retries=0, delivery_timeout_ms=spec.delivery_timeout_ms,
                memory_quota=spec.config.memory_quota, on_delivery_latency=spec.on_delivery_latency))
        except Exception as exc:  # reported through `error` like any other failure, for the owner to decide
            self._error = exc

    def start(self) -> None:
        if self._feed is not None:
            self._feed.start(check_sink=False)

    def stop(self, timeout: float = 1.0) -> None:
        if self._feed is not None:
            self._feed.remove(timeout)

    @property
    def checkpoint(self) -> Checkpoint | None:
        return None if self._feed is None else self._feed.checkpoint

    @property
    def error(self) -> BaseException | None:
        feed = self._feed
        if feed is None:
            return self._error
        if feed.state == "removed":  # stopped by the owner: whatever ended the attempt is not news
            return None
        error = feed.error or feed.delivery_error  # a failed delivery counts before the attempt winds down
        if error is None and feed.state == "finished" and not self._ends:
            return SourceConnectionError("the capture ended without an error; restarting from the checkpoint")
        return error

    @property
    def finished(self) -> bool:
        feed = self._feed
        return feed is not None and feed.state == "finished" and self._ends and feed.in_flight == 0

    @property
    def _ends(self) -> bool:
        """Whether the run ends by itself: at its target, or after the snapshot of 'initial_only'."""
        return self.spec.target_ts is not None or self.spec.config.snapshot_mode == "initial_only"

    @property
    def ready_since(self) -> float | None:
        return None if self._feed is None else self._feed.ready_since

    def stats(self) -> dict[str, dict[str, int]]:
        return {} if self._feed is None else self._feed.stats()

    def gauges(self) -> RunGauges:
        feed = self._feed
        if feed is None:
            return RunGauges(False, 0, self.spec.config.memory_quota)
        return RunGauges(feed.ready_since is not None, feed.in_flight_bytes, feed.spec.memory_quota,
                         feed.snapshot_progress())


RunnerFactory = Callable[[RunSpec], FeedRunner]
