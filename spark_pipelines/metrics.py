"""The pipeline's Prometheus metrics (`spark-pipeline run --metrics-port`), named as Spark's streaming
progress reports them (StreamingQueryProgress: durationMs, numInputRows, the Kafka source's
latestOffset/endOffset) and prefixed `lakefeed_pipeline_` (Prometheus naming: base units, `_total`
for counters)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from spark_pipelines.progress import BatchLine

# A micro-batch takes seconds (docs/benchmarks.md), a catch-up batch minutes.
DURATION_BUCKETS = (0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)


class PipelineMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.batches = Counter("lakefeed_pipeline_batches", "Micro-batches applied", registry=self.registry)
        self.duration = Histogram("lakefeed_pipeline_batch_duration_seconds", "Micro-batch duration (Spark's "
                                  "triggerExecution)", buckets=DURATION_BUCKETS, registry=self.registry)
        self.rows = Counter("lakefeed_pipeline_rows_applied", "Row changes applied, per source table",
                            ["table"], registry=self.registry)
        self.behind = Gauge("lakefeed_pipeline_offsets_behind", "Records in the topic after the last applied "
                            "batch (latest offset - end offset, summed over partitions)", ["topic"],
                            registry=self.registry)
        self.last_batch = Gauge("lakefeed_pipeline_last_batch_timestamp_seconds", "When the last micro-batch "
                                "ended (Unix time)", registry=self.registry)
        self.newest_commit_s: float | None = None
        freshness = Gauge("lakefeed_pipeline_freshness_seconds", "Now minus the commit time of the newest change "
                          "applied (NaN before the first)", registry=self.registry)
        freshness.set_function(self._freshness)

    def _freshness(self) -> float:
        return float("nan") if self.newest_commit_s is None else max(0.0, time.time() - self.newest_commit_s)

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        start_http_server(port, addr=host, registry=self.registry)

    def record(self, line: BatchLine) -> None:
        self.batches.inc()
        self.duration.observe(line.duration_s)
        for table, rows in line.rows:
            self.rows.labels(table).inc(rows)
        for topic, behind in line.offsets_behind:
            self.behind.labels(topic).set(behind)
        if line.newest_commit_ms is not None:
            self.newest_commit_s = line.newest_commit_ms / 1000
        self.last_batch.set(line.ended_s)
