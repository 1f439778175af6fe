"""The console's reading of the pipeline's Prometheus endpoint: a real exporter over HTTP (prometheus_client,
as the pipeline serves its metrics), the three families picked out of everything else, and one-line errors
for an unreachable endpoint, a page that is not Prometheus text and a bad --pipeline-metrics-url."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from changefeed.console.pipeline_metrics import Sample, check_url, fetch, parse
from changefeed.errors import ConfigError, PipelineMetricsError
from lakefeed_testing.net import free_port


@pytest.fixture
def exporter() -> Iterator[str]:
    registry = CollectorRegistry()
    Counter("lakefeed_pipeline_batches", "batches", ["job"], registry=registry).labels("orders").inc(3)
    Gauge("lakefeed_pipeline_freshness_seconds", "freshness", ["job"], registry=registry).labels("orders").set(1.5)
    Gauge("lakefeed_pipeline_last_batch_timestamp_seconds", "last", registry=registry).set(1_700_000_000)
    Gauge("lakefeed_pipeline_rows", "not shown by the console", registry=registry).set(9)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        server.shutdown()
        thread.join(5)


def test_fetch_picks_the_console_families(exporter: str) -> None:
    samples = set(fetch(exporter))
    assert samples == {
        Sample("lakefeed_pipeline_batches_total", (("job", "orders"),), 3.0),
        Sample("lakefeed_pipeline_freshness_seconds", (("job", "orders"),), 1.5),
        Sample("lakefeed_pipeline_last_batch_timestamp_seconds", (), 1_700_000_000.0),
    }


def test_unreachable_endpoint_is_a_retriable_one_line_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/metrics"
    with pytest.raises(PipelineMetricsError, match=r"cannot read the pipeline's metrics at .*--metrics-port") as info:
        fetch(url, timeout=1)
    assert info.value.retriable and "\n" not in str(info.value)


def test_text_that_is_not_prometheus_is_refused() -> None:
    with pytest.raises(PipelineMetricsError, match="not in the Prometheus text format"):
        parse("<html>lakefeed_pipeline_batches_total{ 1</html>\n")


@pytest.mark.parametrize("url", ["127.0.0.1:9464/metrics", "ftp://host/metrics", "http:///metrics"])
def test_check_url_refuses_what_is_not_http(url: str) -> None:
    with pytest.raises(ConfigError, match=r"is not an http\(s\) URL; use e.g. http://127.0.0.1:9464/metrics"):
        check_url(url)


def test_server_refuses_a_bad_pipeline_metrics_url_before_starting(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(tmp_path),
                             "--pipeline-metrics-url", "localhost:9464"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--pipeline-metrics-url" in result.stderr and "is not an http(s) URL" in result.stderr
    assert not (tmp_path / "metadata.db").exists()
