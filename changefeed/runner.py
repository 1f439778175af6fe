"""Run one changefeed: capture -> delivery -> Kafka sink, checkpoint persisted, retried, cancellable.

    feed = Changefeed(ChangefeedSpec("orders", settings, "kafka://127.0.0.1:9092/cdc"))
    feed.create()          # topic checks: misconfigurations fail here, with a clear message
    feed.start()           # runs in its own thread until stopped, a target, or a fatal error
    feed.checkpoint        # only ever covers acknowledged messages
    feed.remove()          # returns within a second, even while the broker is down

A retriable failure (broker down, source connection lost) closes the sink, keeps the persisted
checkpoint and restarts from it after an exponential backoff with jitter; removal cancels that sleep,
stops the capture and purges the producer at once, so one changefeed never blocks another.

This is the one capture -> sink pipeline: the server's owner loop runs it too, through
`changefeed.lifecycle.runner.PipelineRunner` (one attempt, `max_retries=0`: the owner retries).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from changefeed.checkpoint import CheckpointStore
from changefeed.config import SinkOptions
from changefeed.delivery import Delivery
from changefeed.dispatch.router import DispatchRule
from changefeed.errors import ChangefeedError
from changefeed.model import CaptureEvent, Checkpoint, Position, RowChange, TransactionCommit
from changefeed.pipeline import build_delivery, effective_sink_config, run_cancellable
from changefeed.source.capture import CaptureOptions, CaptureSource
from changefeed.source.capture_process import CaptureProcess
from changefeed.source.server import ConnectionSettings
from changefeed.source.snapshot import SnapshotProgress
from sink.errors import SinkError
from sink.kafka import KafkaSink, TopicInfo, prepare_topic
from sink.retry import Backoff, Cancellation
from sink.uri import KafkaSinkConfig, parse_sink_uri

log = logging.getLogger(__name__)

STATES = ("created", "running", "warning", "finished", "failed", "removed")


@dataclass(frozen=True)
class ChangefeedSpec:
    changefeed_id: str
    source: ConnectionSettings
    sink_uri: str
    capture: CaptureOptions = field(default_factory=CaptureOptions)
    rules: tuple[DispatchRule, ...] = ()
    start: Checkpoint | None = None  # used when the store holds no checkpoint yet
    target: Position | None = None  # finish once the checkpoint reaches this position
    target_ts: int | None = None  # or once a commit reaches this commit timestamp (the server's --target-ts)
    sink_options: SinkOptions | None = None  # the YAML config's sink block; wins over the sink URI
    checkpoint_store_url: str = "sqlite://"
    checkpoint_interval_s: float = 0.5
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=1.0, maximum=60.0))
    max_retries: int = 1000
    delivery_timeout_ms: int = 30_000
    memory_quota: int = 64 * 1024 * 1024
    watermark_every: int = 0
    # Capture (binlog reading, row decoding) in a child process of its own, beside delivery in this one
    # (changefeed/source/capture_process.py); False keeps both in this process (one core, or debugging).
    capture_process: bool = True
    on_delivery_latency: Callable[[float], None] | None = field(default=None, compare=False)


class Changefeed:
    def __init__(self, spec: ChangefeedSpec) -> None:
        self.spec = spec
        self.config: KafkaSinkConfig = effective_sink_config(parse_sink_uri(spec.sink_uri), spec.sink_options)
        self.store = CheckpointStore(spec.checkpoint_store_url)
        self.state = "created"
        self.error: BaseException | None = None
        self.retries = 0
        self.rows = 0
        self.ready_since: float | None = None  # monotonic time the current attempt reached source and sink
        self._tables: dict[str, dict[str, int]] = {}
        self._snapshot: dict[str, SnapshotProgress] = {}
        self.topic_info: TopicInfo | None = None
        self._cancel = Cancellation()
        self._attempt_stop = threading.Event()  # ends the current attempt's capture
        self._sink: KafkaSink | None = None
        self._delivery: Delivery | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._saved: Checkpoint | None = spec.start

    def create(self) -> TopicInfo:
        """Topic checks; raises SinkError (SinkConfigError, TopicError) when the sink is misconfigured."""
        timeout = max(2.0, self.config.dial_timeout_ms / 1000)
        self.topic_info = prepare_topic(self.config, timeout=timeout)
        for rule in self.spec.rules:
            if rule.topic and "{" not in rule.topic and rule.topic != self.config.topic:
                prepare_topic(self.config, rule.topic, timeout=timeout)
        return self.topic_info

    @property
    def checkpoint(self) -> Checkpoint | None:
        """The newest checkpoint covered by acknowledgements (persisted at most one interval later)."""
        delivery = self._delivery
        live = delivery.checkpoint if delivery is not None else None
        return live or self._saved

    @property
    def delivery_error(self) -> BaseException | None:
        """The latest attempt's first failed delivery, seen before that attempt has wound down."""
        delivery = self._delivery
        return delivery.tracker.error if delivery is not None else None

    @property
    def in_flight(self) -> int:
        delivery = self._delivery
        return delivery.tracker.in_flight if delivery is not None else 0

    @property
    def in_flight_bytes(self) -> int:
        """Bytes sent but not yet acknowledged: the memory quota in use."""
        with self._lock:
            sink = self._sink
        return sink.in_flight_bytes if sink is not None else 0

    def snapshot_progress(self) -> tuple[SnapshotProgress, ...]:
        """The latest snapshot progress of every table the snapshot has started (empty without one)."""
        return tuple(self._snapshot.values())

    def _on_snapshot_progress(self, progress: SnapshotProgress) -> None:
        self._snapshot[str(progress.table)] = progress

    def stats(self) -> dict[str, dict[str, int]]:
        """Cumulative {"schema.table": {"rows": n, "bytes": n}} over all attempts."""
        return {table: dict(values) for table, values in list(self._tables.items())}

    def start(self, check_sink: bool = True) -> None:
        """check_sink=False leaves the topic checks to the run thread (cancellable there), for a caller
        such as the server's owner loop that must not block on an unreachable broker."""
        if check_sink and self.topic_info is None:
            self.create()
        self.state = "running"
        self._thread = threading.Thread(target=self._run, name=f"changefeed-{self.spec.changefeed_id}", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run to end (target reached, end of binlog when not blocking, failure)."""
        assert self._thread is not None
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def remove(self, timeout: float = 1.0) -> bool:
        """Cancel retries, stop capture, purge the producer; True if the run thread ended in time."""
        self._cancel.cancel()
        self._attempt_stop.set()
        with self._lock:
            sink = self._sink
        if sink is not None:
            sink.close()
        ended = self.wait(timeout) if self._thread is not None else True
        if self.state not in ("finished", "failed"):
            self.state = "removed"
        return ended

    # The run thread.

    def _run(self) -> None:
        attempt = 0
        try:
            while not self._cancel.cancelled:
                try:
                    if self._run_once():
                        self.state = "finished"
                        return
                    attempt = 0
                except (SinkError, ChangefeedError) as exc:
                    if self._cancel.cancelled:
                        return
                    if not exc.retriable or attempt >= self.spec.max_retries:
                        raise
                    attempt += 1
                    self.retries += 1
                    self.state = "warning"
                    delay = self.spec.backoff.delay(attempt)
                    log.warning("changefeed %s: %s; retry %d in %.1f s", self.spec.changefeed_id, exc, attempt, delay)
                    if not self._cancel.sleep(delay):
                        return
                    self.state = "running"
        except BaseException as exc:  # a thread must record, not lose, its failure
            self.error = exc
            self.state = "failed"
            log.error("changefeed %s failed: %s", self.spec.changefeed_id, exc)

    def _run_once(self) -> bool:
        """One attempt from the persisted checkpoint; True when finished, False when cancelled."""
        spec, info = self.spec, self.topic_info
        start = self.store.load(spec.changefeed_id) or spec.start
        stop = self._attempt_stop = threading.Event()
        # Not checked yet (start(check_sink=False)), or a restarted broker may have lost topics: create
        # them again and re-check the limits.
        if self.retries or info is None:
            info = run_cancellable(self.create, self._cancel, f"changefeed-{spec.changefeed_id}-check")
            if info is None:
                return False
        sink = KafkaSink(
            self.config,
            message_limit=info.max_message_bytes,
            memory_quota=spec.memory_quota,
            delivery_timeout_ms=spec.delivery_timeout_ms,
        )
        with self._lock:
            self._sink = sink
        if self._cancel.cancelled:
            stop.set()
        raw = spec.sink_options.output_raw_change_event if spec.sink_options is not None else False
        try:
            delivery = build_delivery(sink, self.config, info, spec.rules, start=start, output_raw_change_event=raw,
                                      watermark_every=spec.watermark_every, on_failure=stop.set,
                                      on_latency=spec.on_delivery_latency)
            source_type = CaptureProcess if spec.capture_process else CaptureSource
            source = source_type(spec.source, spec.capture, start=start, stop=stop,
                                 on_progress=self._on_snapshot_progress)
        except BaseException:
            sink.close()  # nothing was sent yet; the producer's thread must not outlive the attempt
            raise
        self._delivery = delivery
        log.info("changefeed %s: running from %s", spec.changefeed_id, start.position if start else "now")
        self.ready_since = time.monotonic()
        try:
            delivery.run(self._events(source.events(), delivery))
            while sink.flush(0.1) > 0:
                if self._cancel.cancelled:
                    return False
            error = delivery.tracker.error
            if error is not None:
                raise error
            return not self._cancel.cancelled
        except BaseException:
            # A failure on the capture or encoding side (not a delivery): let what was already sent be
            # acknowledged, bounded, so the saved checkpoint covers it and a restart re-sends less.
            if delivery.tracker.error is None and not self._cancel.cancelled:
                sink.flush(5.0)
            self.ready_since = None
            raise
        finally:
            source.close()
            sink.close()
            self._save(delivery)
            self.rows += delivery.stats.rows

    def _events(self, events: Iterable[CaptureEvent], delivery: Delivery) -> Iterator[CaptureEvent]:
        """Pass events through; count rows and encoded bytes per table; persist the acknowledged
        checkpoint now and then; stop at the target."""
        last_save = time.monotonic()
        target, target_ts = self.spec.target, self.spec.target_ts
        for event in events:
            if self._cancel.cancelled:
                return
            encoded = delivery.stats.bytes
            yield event
            # Delivery asks for the next event only once it has encoded and sent this one.
            if isinstance(event, RowChange):
                entry = self._tables.setdefault(str(event.table.name), {"rows": 0, "bytes": 0})
                entry["rows"] += 1
                entry["bytes"] += delivery.stats.bytes - encoded
            if isinstance(event, TransactionCommit):
                now = time.monotonic()
                if now - last_save >= self.spec.checkpoint_interval_s:
                    self._save(delivery)
                    last_save = now
                if target is not None and event.checkpoint.position.sort_key >= target.sort_key:
                    return
                if target_ts is not None and event.checkpoint.commit_ts >= target_ts:
                    return

    def _save(self, delivery: Delivery) -> None:
        checkpoint = delivery.checkpoint
        if checkpoint is not None and checkpoint != self._saved:
            self.store.save(self.spec.changefeed_id, checkpoint)
            self._saved = checkpoint

