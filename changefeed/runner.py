"""Run one changefeed: capture -> delivery -> Kafka sink, checkpoint persisted, retried, cancellable.

    feed = Changefeed(ChangefeedSpec("orders", settings, "kafka://127.0.0.1:9092/cdc"))
    feed.create()          # topic checks: misconfigurations fail here, with a clear message
    feed.start()           # runs in its own thread until stopped, a target, or a fatal error
    feed.checkpoint        # only ever covers acknowledged messages
    feed.remove()          # returns within a second, even while the broker is down

A retriable failure (broker down, source connection lost) closes the sink, keeps the persisted
checkpoint and restarts from it after an exponential backoff with jitter; removal cancels that sleep,
stops the capture and purges the producer at once, so one changefeed never blocks another.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from changefeed.checkpoint import CheckpointStore
from changefeed.codec.canal_json import CanalJsonEncoder, CanalJsonOptions
from changefeed.delivery import Delivery
from changefeed.dispatch.router import DispatchRule, Router
from changefeed.errors import ChangefeedError
from changefeed.model import CaptureEvent, Checkpoint, Position, TransactionCommit
from changefeed.source.capture import CaptureOptions, CaptureSource
from changefeed.source.server import ConnectionSettings
from sink.claim_check import FileClaimCheckStorage
from sink.errors import SinkError
from sink.kafka import KafkaSink, TopicInfo, prepare_topic
from sink.retry import Backoff, Cancellation
from sink.uri import KafkaSinkConfig, parse_sink_uri

log = logging.getLogger(__name__)

T = TypeVar("T")
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
    checkpoint_store_url: str = "sqlite://"
    checkpoint_interval_s: float = 0.5
    backoff: Backoff = field(default_factory=lambda: Backoff(initial=1.0, maximum=60.0))
    max_retries: int = 1000
    delivery_timeout_ms: int = 30_000
    memory_quota: int = 64 * 1024 * 1024
    watermark_every: int = 0


class Changefeed:
    def __init__(self, spec: ChangefeedSpec) -> None:
        self.spec = spec
        self.config: KafkaSinkConfig = parse_sink_uri(spec.sink_uri)
        self.store = CheckpointStore(spec.checkpoint_store_url)
        self.state = "created"
        self.error: BaseException | None = None
        self.retries = 0
        self.rows = 0
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

    def start(self) -> None:
        if self.topic_info is None:
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
        assert info is not None
        start = self.store.load(spec.changefeed_id) or spec.start
        stop = self._attempt_stop = threading.Event()
        if self.retries:  # a restarted broker may have lost topics; create them again, re-check limits
            checked = self._cancellable(self.create)
            if checked is None:
                return False
            info = checked
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
        claim_check = None
        if self.config.large_message_handle == "claim-check":
            assert self.config.claim_check_storage_uri is not None
            claim_check = FileClaimCheckStorage(self.config.claim_check_storage_uri)
        encoder = CanalJsonEncoder(CanalJsonOptions(enable_tidb_extension=self.config.enable_tidb_extension,
                                                    content_compatible=self.config.content_compatible))
        delivery = Delivery(
            sink,
            encoder,
            Router(self.config.topic, spec.rules),
            _PartitionCounts(self.config, info),
            message_limit=info.max_message_bytes,
            start=start,
            watermark_every=spec.watermark_every,
            large_message_handle=self.config.large_message_handle,
            claim_check=claim_check,
            on_failure=stop.set,
        )
        self._delivery = delivery
        source = CaptureSource(spec.source, spec.capture, start=start, stop=stop)
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
            raise
        finally:
            source.close()
            sink.close()
            self._save(delivery)
            self.rows += delivery.stats.rows

    def _cancellable(self, call: Callable[[], T]) -> T | None:
        """Run a blocking network call (admin requests wait up to the dial timeout) in a helper thread,
        so removal never waits for it: None when cancelled first; its exception is re-raised."""
        result: list[T] = []
        failure: list[BaseException] = []

        def target() -> None:
            try:
                result.append(call())
            except BaseException as exc:
                failure.append(exc)

        helper = threading.Thread(target=target, name=f"changefeed-{self.spec.changefeed_id}-check", daemon=True)
        helper.start()
        while helper.is_alive():
            if not self._cancel.sleep(0.05):
                return None
        if failure:
            raise failure[0]
        return result[0]

    def _events(self, events: Iterable[CaptureEvent], delivery: Delivery) -> Iterator[CaptureEvent]:
        """Pass events through; persist the acknowledged checkpoint now and then; stop at the target."""
        last_save = time.monotonic()
        target = self.spec.target
        for event in events:
            if self._cancel.cancelled:
                return
            yield event
            if isinstance(event, TransactionCommit):
                now = time.monotonic()
                if now - last_save >= self.spec.checkpoint_interval_s:
                    self._save(delivery)
                    last_save = now
                if target is not None and event.checkpoint.position.sort_key >= target.sort_key:
                    return

    def _save(self, delivery: Delivery) -> None:
        checkpoint = delivery.checkpoint
        if checkpoint is not None and checkpoint != self._saved:
            self.store.save(self.spec.changefeed_id, checkpoint)
            self._saved = checkpoint


class _PartitionCounts(dict[str, int]):
    """Partition count per topic, looked up (and the topic prepared) the first time a rule names it."""

    def __init__(self, config: KafkaSinkConfig, info: TopicInfo) -> None:
        super().__init__({info.name: config.partition_num or info.partitions})
        self._config = config

    def __missing__(self, topic: str) -> int:
        info = prepare_topic(self._config, topic)
        count = self._config.partition_num or info.partitions
        self[topic] = count
        return count
