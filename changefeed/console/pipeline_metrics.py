"""The Spark pipeline's batches and freshness for the console, read from the pipeline's Prometheus
endpoint (`spark-pipeline run --metrics-port`) given to `changefeed server --pipeline-metrics-url`.

The server reads it rather than the browser so the page needs no cross-origin access to the pipeline;
the text is parsed with prometheus_client's parser (Prometheus text exposition format 0.0.4).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

from changefeed.errors import ConfigError, PipelineMetricsError

# The pipeline's families the console shows (sample names, so a counter's `_total` is included).
SAMPLES = (
    "lakefeed_pipeline_batches_total",
    "lakefeed_pipeline_freshness_seconds",
    "lakefeed_pipeline_last_batch_timestamp_seconds",
)


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


def check_url(url: str) -> str:
    """`url` when it is an http(s) URL with a host; ConfigError naming the problem otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{url!r} is not an http(s) URL; "
                          "use e.g. http://127.0.0.1:9464/metrics (the pipeline's --metrics-port)")
    return url


def parse(text: str) -> tuple[Sample, ...]:
    """The console's samples from a Prometheus text page; other families are ignored."""
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as exc:
        raise PipelineMetricsError(f"the pipeline's metrics are not in the Prometheus text format: {exc}") from exc
    return tuple(Sample(s.name, tuple(sorted(s.labels.items())), float(s.value))
                 for family in families for s in family.samples if s.name in SAMPLES)


def fetch(url: str, timeout: float = 2.0) -> tuple[Sample, ...]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        raise PipelineMetricsError(f"cannot read the pipeline's metrics at {url}: {exc}; is "
                                   "`spark-pipeline run --metrics-port` running there?") from exc
    return parse(text)
