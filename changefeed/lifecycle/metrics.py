"""Prometheus metrics of the changefeeds this server owns (exposed at /metrics).

Every family carries a `changefeed` label and keeps the `changefeed_` prefix; where TiCDC has the same
measure the help text names its TiCDC counterpart (docs.pingcap.com/tidb/stable/ticdc-metrics,
tiflow `cdc/owner/metrics.go`, `cdc/sink/metrics`). When a changefeed is removed every one of its series
is dropped (`forget`), as TiCDC's owner deletes a removed changefeed's label values, so dashboards never
show a feed that no longer exists. The table is in docs/changefeed.md#metrics.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from changefeed.lifecycle.state import State

# From a local broker's sub-millisecond acknowledgement to a retrying producer's delivery timeout.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        cf, table = ["changefeed"], ["changefeed", "table"]
        self.checkpoint_lag = Gauge("changefeed_checkpoint_lag_seconds",
                                    "Seconds between now and the commit time of the checkpoint "
                                    "(TiCDC ticdc_owner_checkpoint_ts_lag)", cf, registry=r)
        self.checkpoint_time = Gauge("changefeed_checkpoint_timestamp_seconds",
                                     "Commit time (Unix seconds) of the checkpoint (TiCDC ticdc_owner_checkpoint_ts)",
                                     cf, registry=r)
        self.rows = Counter("changefeed_rows", "Rows delivered, per table", table, registry=r)
        self.bytes = Counter("changefeed_bytes", "Encoded bytes delivered, per table", table, registry=r)
        self.row_rate = Gauge("changefeed_rows_per_second", "Rows per second over the last interval, per table",
                              table, registry=r)
        self.byte_rate = Gauge("changefeed_bytes_per_second", "Bytes per second over the last interval, per table",
                               table, registry=r)
        self.sink_errors = Counter("changefeed_sink_errors", "Errors that stopped a run", cf, registry=r)
        self.retries = Counter("changefeed_retries", "Restarts after a retriable error", cf, registry=r)
        self.state = Gauge("changefeed_state", "1 for the changefeed's current state", ["changefeed", "state"],
                           registry=r)
        self.source_connected = Gauge("changefeed_source_connected",
                                      "1 while the changefeed's run reaches its MySQL source and sink", cf, registry=r)
        self.binlog_behind = Gauge("changefeed_source_binlog_behind_bytes",
                                   "Binlog bytes between the checkpoint and the source server's head "
                                   "(SHOW BINARY LOGS sizes)", cf, registry=r)
        self.delivery_latency = Histogram("changefeed_delivery_latency_seconds",
                                          "Seconds from handing a batch of messages (a transaction's, at most 500) "
                                          "to the producer to the broker's acknowledgement of all of it "
                                          "(TiCDC ticdc_sink_mq_worker_send_message_duration)",
                                          cf, buckets=_LATENCY_BUCKETS, registry=r)
        self.snapshot_read = Gauge("changefeed_snapshot_rows_read", "Rows the initial snapshot has read, per table",
                                   table, registry=r)
        self.snapshot_estimated = Gauge("changefeed_snapshot_rows_estimated",
                                        "Rows the initial snapshot expects, per table (information_schema estimate)",
                                        table, registry=r)
        self.snapshot_done = Gauge("changefeed_snapshot_table_done", "1 once the snapshot of the table is read",
                                   table, registry=r)
        self.memory_used = Gauge("changefeed_memory_quota_used_bytes",
                                 "Bytes of messages sent but not yet acknowledged (TiCDC memory quota use)",
                                 cf, registry=r)
        self.memory_quota = Gauge("changefeed_memory_quota_bytes", "The changefeed's memory-quota", cf, registry=r)
        self._families: tuple[Counter | Gauge | Histogram, ...] = (
            self.checkpoint_lag, self.checkpoint_time, self.rows, self.bytes, self.row_rate, self.byte_rate,
            self.sink_errors, self.retries, self.state, self.source_connected, self.binlog_behind,
            self.delivery_latency, self.snapshot_read, self.snapshot_estimated, self.snapshot_done,
            self.memory_used, self.memory_quota)

    def set_state(self, changefeed: str, state: State) -> None:
        for candidate in State:
            self.state.labels(changefeed, candidate.value).set(1 if candidate is state else 0)

    def forget(self, changefeed: str) -> None:
        """Drop every series of `changefeed` (it was removed)."""
        for family in self._families:
            family.remove_by_labels({"changefeed": changefeed})

    def stopped(self, changefeed: str) -> None:
        """The run ended (paused, failed, lease lost): the run's live gauges no longer describe anything."""
        self.source_connected.labels(changefeed).set(0)
        for family in (self.binlog_behind, self.memory_used, self.row_rate, self.byte_rate):
            family.remove_by_labels({"changefeed": changefeed})
