"""Prometheus metrics of the changefeeds this server owns (exposed at /metrics)."""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge

from changefeed.lifecycle.state import State


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.checkpoint_lag = Gauge("changefeed_checkpoint_lag_seconds",
                                    "Seconds between now and the commit time of the checkpoint",
                                    ["changefeed"], registry=self.registry)
        self.rows = Counter("changefeed_rows", "Rows delivered, per table", ["changefeed", "table"],
                            registry=self.registry)
        self.bytes = Counter("changefeed_bytes", "Encoded bytes delivered, per table", ["changefeed", "table"],
                             registry=self.registry)
        self.row_rate = Gauge("changefeed_rows_per_second", "Rows per second over the last interval, per table",
                              ["changefeed", "table"], registry=self.registry)
        self.byte_rate = Gauge("changefeed_bytes_per_second", "Bytes per second over the last interval, per table",
                               ["changefeed", "table"], registry=self.registry)
        self.sink_errors = Counter("changefeed_sink_errors", "Errors that stopped a run", ["changefeed"],
                                   registry=self.registry)
        self.retries = Counter("changefeed_retries", "Restarts after a retriable error", ["changefeed"],
                               registry=self.registry)
        self.state = Gauge("changefeed_state", "1 for the changefeed's current state", ["changefeed", "state"],
                           registry=self.registry)

    def set_state(self, changefeed: str, state: State) -> None:
        for candidate in State:
            self.state.labels(changefeed, candidate.value).set(1 if candidate is state else 0)

    def forget(self, changefeed: str) -> None:
        for metric in (self.checkpoint_lag, self.sink_errors, self.retries):
            with contextlib.suppress(KeyError):
                metric.remove(changefeed)
        for candidate in State:
            with contextlib.suppress(KeyError):
                self.state.remove(changefeed, candidate.value)
