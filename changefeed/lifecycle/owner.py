"""The server loop: take leases on changefeeds, run the ones that should run, record what happens.

Every `tick` seconds the owner reads all changefeeds from the metadata store. For each one that
should run (normal, or warning whose retry time has come) it renews or takes the lease; if it holds
the lease it makes sure a runner of the current epoch runs, saves that runner's checkpoint and
stats, and turns a runner's error into warning (backoff) or failed. A server that dies stops renewing
its leases; after `lease_ttl` another server takes its changefeeds over from their checkpoints.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from changefeed.config import load_config
from changefeed.lifecycle.binlog_head import BinlogHeadProbe
from changefeed.lifecycle.metrics import Metrics
from changefeed.lifecycle.runner import FeedRunner, RunnerFactory, RunSpec
from changefeed.lifecycle.state import RUNNING_STATES, State, decide_on_error
from changefeed.lifecycle.store import ChangefeedRecord, MetadataStore
from changefeed.model import Checkpoint, tso_physical_ms
from sink.retry import Backoff

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OwnerSettings:
    server_id: str = field(default_factory=lambda: f"server-{uuid.uuid4().hex[:8]}")
    tick: float = 0.5
    lease_ttl: float = 5.0
    backoff: Backoff = field(default_factory=Backoff)  # 10 s .. 10 min with jitter
    healthy_after: float = 10.0  # a warning turns normal on progress, or this long after reaching source and sink
    delivery_timeout_ms: int = 30_000
    binlog_probe_interval: float = 0.0  # > 0: measure binlog bytes behind the source's head this often


@dataclass
class _Running:
    runner: FeedRunner
    epoch: int
    started: float
    saved: Checkpoint | None
    last_stats: dict[str, dict[str, int]] = field(default_factory=dict)
    last_time: float = field(default_factory=time.time)
    logged_at: float = 0.0


def _retriable(error: BaseException) -> bool:
    # Our errors say; anything else (a driver or network surprise) is retried until stuck.
    return bool(getattr(error, "retriable", True))


class Owner:
    def __init__(self, store: MetadataStore, metadata_url: str, factory: RunnerFactory,
                 settings: OwnerSettings | None = None, metrics: Metrics | None = None) -> None:
        self.store = store
        self.metadata_url = metadata_url
        self.factory = factory
        self.settings = settings or OwnerSettings()
        self.metrics = metrics or Metrics()
        self._running: dict[str, _Running] = {}
        self._reported: set[str] = set()  # changefeeds with series in `metrics`, to drop when removed
        self._probe = BinlogHeadProbe(self.settings.binlog_probe_interval) if self.settings.binlog_probe_interval > 0 \
            else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="changefeed-owner", daemon=True)

    @property
    def server_id(self) -> str:
        return self.settings.server_id

    def start(self) -> None:
        self._thread.start()
        if self._probe is not None:
            self._probe.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        if self._probe is not None:
            self._probe.stop()
        for cf_id in list(self._running):
            self._stop_runner(cf_id)
            self.store.release(cf_id, self.server_id)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # a store hiccup must not kill the loop; the next tick retries
                log.exception("owner tick failed")
            self._stop.wait(self.settings.tick)

    def tick(self) -> None:
        records = {r.id: r for r in self.store.all()}
        for cf_id in list(self._running):
            if cf_id not in records:
                log.info("changefeed %s: removed; stopping", cf_id)
                self._stop_runner(cf_id)
        for cf_id in self._reported - records.keys():  # removed, whether it ran here or not
            self.metrics.forget(cf_id)
            self._reported.discard(cf_id)
        for record in records.values():
            self._handle(record, time.time())

    def _handle(self, rec: ChangefeedRecord, now: float) -> None:
        running = self._running.get(rec.id)
        if rec.state not in RUNNING_STATES:
            if running is not None:
                log.info("changefeed %s: %s; stopping its runner", rec.id, rec.state)
                self._stop_runner(rec.id)
                final = running.runner.checkpoint
                if final is not None and final != running.saved and running.epoch == rec.epoch:
                    self.store.owner_set(rec.id, self.server_id, rec.epoch, checkpoint=final, checkpoint_at=now)
            if rec.owner == self.server_id:
                self.store.release(rec.id, self.server_id)
            self._report(rec)
            return
        if running is None and rec.state is State.WARNING and (rec.next_retry or 0) > now:
            return  # waiting out the backoff; no lease held meanwhile
        if not self.store.acquire(rec.id, self.server_id, self.settings.lease_ttl):
            if running is not None:
                log.warning("changefeed %s: lease lost to %s; stopping", rec.id, rec.owner)
                self._stop_runner(rec.id)
            return
        if running is not None and running.epoch != rec.epoch:
            log.info("changefeed %s: changed by an operator; restarting", rec.id)
            self._stop_runner(rec.id)
            running = None
        if running is None:
            self._start_runner(rec, now)
            return
        self._observe(rec, running, now)

    def _start_runner(self, rec: ChangefeedRecord, now: float) -> None:
        if rec.checkpoint is None:
            raise RuntimeError(f"changefeed {rec.id} has no checkpoint")  # create always stores one
        spec = RunSpec(rec.id, rec.source, rec.sink_uri, load_config(rec.config), rec.checkpoint,
                       rec.target_ts, self.metadata_url, self.settings.delivery_timeout_ms,
                       on_delivery_latency=self.metrics.delivery_latency.labels(rec.id).observe)
        runner = self.factory(spec)
        runner.start()
        self._reported.add(rec.id)
        # Counters exist from the start at 0, so rate()/increase() see the first error (Prometheus practice).
        self.metrics.sink_errors.labels(rec.id)
        self.metrics.retries.labels(rec.id)
        if rec.state is State.WARNING:
            self.metrics.retries.labels(rec.id).inc()
        log.info("changefeed %s: started on %s (state %s)", rec.id, self.server_id, rec.state)
        self._running[rec.id] = _Running(runner, rec.epoch, now, rec.checkpoint)

    def _observe(self, rec: ChangefeedRecord, running: _Running, now: float) -> None:
        runner = running.runner
        checkpoint = runner.checkpoint
        values: dict[str, Any] = {}
        progressed = checkpoint is not None and checkpoint != running.saved
        if progressed:
            values.update(checkpoint=checkpoint, checkpoint_at=now)
        values["stats"] = self._stats(rec.id, running, now)
        error = runner.error
        if error is not None:
            self._stop_runner(rec.id)
            self.metrics.sink_errors.labels(rec.id).inc()
            first = None if progressed else rec.first_error_at
            decision = decide_on_error(
                retriable=_retriable(error), now=now, retry_count=rec.retry_count, first_error_at=first,
                stuck_duration_s=load_config(rec.config).error_stuck_duration_s, backoff=self.settings.backoff)
            log.warning("changefeed %s: %s -> %s (retry %d at %s)", rec.id, error, decision.state,
                        decision.retry_count, decision.next_retry)
            values.update(state=decision.state, error=f"{type(error).__name__}: {error}", error_at=now,
                          retry_count=decision.retry_count, next_retry=decision.next_retry,
                          first_error_at=decision.first_error_at)
            self.store.owner_set(rec.id, self.server_id, rec.epoch, **values)
            self._set_state(rec.id, decision.state)
            return
        if runner.finished:
            self._stop_runner(rec.id)
            values.update(state=State.FINISHED)
        elif rec.state is State.WARNING and (progressed or self._healthy(runner)):
            log.info("changefeed %s: recovered; normal again", rec.id)
            values.update(state=State.NORMAL, retry_count=0, next_retry=None, first_error_at=None, error=None,
                          error_at=None)
        if self.store.owner_set(rec.id, self.server_id, rec.epoch, **values) and checkpoint is not None:
            running.saved = checkpoint
        self._gauges(rec, runner, checkpoint, now)
        self._set_state(rec.id, values.get("state", rec.state))

    def _gauges(self, rec: ChangefeedRecord, runner: FeedRunner, checkpoint: Checkpoint | None, now: float) -> None:
        metrics, cf_id = self.metrics, rec.id
        if checkpoint is not None:
            # Lag is measured against the checkpoint's commit time; capture heartbeats move an idle feed's
            # checkpoint forward, so an idle source does not read as lag (TiCDC's resolved ts does the same).
            committed = tso_physical_ms(checkpoint.commit_ts) / 1000
            metrics.checkpoint_lag.labels(cf_id).set(max(0.0, now - committed))
            metrics.checkpoint_time.labels(cf_id).set(committed)
            if self._probe is not None:
                self._probe.watch(cf_id, rec.source, checkpoint.position)
                behind = self._probe.behind(cf_id)
                if behind is not None:
                    metrics.binlog_behind.labels(cf_id).set(behind)
        gauges = runner.gauges()
        metrics.source_connected.labels(cf_id).set(1 if gauges.source_connected else 0)
        metrics.memory_used.labels(cf_id).set(gauges.memory_used_bytes)
        metrics.memory_quota.labels(cf_id).set(gauges.memory_quota_bytes)
        for progress in gauges.snapshot:
            table = str(progress.table)
            metrics.snapshot_read.labels(cf_id, table).set(progress.rows_read)
            metrics.snapshot_estimated.labels(cf_id, table).set(progress.rows_estimated)
            metrics.snapshot_done.labels(cf_id, table).set(1 if progress.done else 0)

    def _set_state(self, cf_id: str, state: State) -> None:
        self.metrics.set_state(cf_id, state)
        self._reported.add(cf_id)

    def _healthy(self, runner: FeedRunner) -> bool:
        ready = runner.ready_since
        return ready is not None and time.monotonic() - ready >= self.settings.healthy_after

    def _stats(self, cf_id: str, running: _Running, now: float) -> dict[str, dict[str, float]]:
        current = running.runner.stats()
        elapsed = max(1e-3, now - running.last_time)
        out: dict[str, dict[str, float]] = {}
        for table, counts in current.items():
            before = running.last_stats.get(table, {"rows": 0, "bytes": 0})
            rows, size = counts["rows"] - before["rows"], counts["bytes"] - before["bytes"]
            self.metrics.rows.labels(cf_id, table).inc(rows)
            self.metrics.bytes.labels(cf_id, table).inc(size)
            self.metrics.row_rate.labels(cf_id, table).set(rows / elapsed)
            self.metrics.byte_rate.labels(cf_id, table).set(size / elapsed)
            out[table] = {"rows": counts["rows"], "bytes": counts["bytes"],
                          "rows_per_second": round(rows / elapsed, 1), "bytes_per_second": round(size / elapsed, 1)}
        if now - running.logged_at >= 10.0:  # progress per table, at most every 10 s per changefeed
            running.logged_at = now
            for table, values in out.items():
                if values["rows_per_second"]:
                    log.info("changefeed %s table %s: %d rows delivered (%.0f rows/s)", cf_id, table,
                             values["rows"], values["rows_per_second"])
        running.last_stats, running.last_time = current, now
        return out

    def _report(self, rec: ChangefeedRecord) -> None:
        if rec.owner in (None, self.server_id):
            self._set_state(rec.id, rec.state)

    def _stop_runner(self, cf_id: str) -> None:
        running = self._running.pop(cf_id, None)
        if self._probe is not None:
            self._probe.forget(cf_id)
        self.metrics.stopped(cf_id)
        if running is not None:
            started = time.monotonic()
            running.runner.stop(1.0)
            log.info("changefeed %s: runner stopped in %.2f s", cf_id, time.monotonic() - started)
