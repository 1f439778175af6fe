"""`changefeed server`: the owner loop plus the HTTP API in one process."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import click
import uvicorn

from changefeed.console.pipeline_metrics import check_url
from changefeed.errors import ConfigError
from changefeed.lifecycle.api import build_app
from changefeed.lifecycle.metrics import Metrics
from changefeed.lifecycle.owner import Owner, OwnerSettings
from changefeed.lifecycle.runner import PipelineRunner
from changefeed.lifecycle.store import MetadataStore
from lakefeed_common import logs
from sink.retry import Backoff


def _listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise click.BadParameter(f"{value!r} is not HOST:PORT, e.g. 127.0.0.1:8300")
    return host, int(port)


def _pipeline_url(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else check_url(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("server")
@click.option("--data-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="directory for the metadata database (SQLite) unless --metadata-url is given")
@click.option("--metadata-url", help="SQLAlchemy URL of the metadata database shared by servers")
@click.option("--listen", default="127.0.0.1:8300", show_default=True, help="HOST:PORT of the HTTP API")
@click.option("--server-id", help="name of this server in leases (default: random)")
@click.option("--lease-ttl", type=float, default=5.0, show_default=True,
              help="seconds after which another server takes over a silent server's changefeeds")
@click.option("--retry-initial", type=float, default=10.0, show_default=True, help="first backoff, seconds")
@click.option("--retry-max", type=float, default=600.0, show_default=True, help="largest backoff, seconds")
@click.option("--healthy-after", type=float, default=10.0, show_default=True,
              help="seconds without error after which a warning changefeed is normal again")
@click.option("--delivery-timeout-ms", type=int, default=30_000, show_default=True,
              help="how long the producer retries one message before the changefeed backs off")
@click.option("--binlog-probe-interval", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="seconds between reads of each source's binlog head for changefeed_source_binlog_behind_bytes "
                   "(0: off)")
@click.option("--auth-token", envvar="LAKEFEED_API_TOKEN", show_envvar=True,
              help="bearer token every API request must carry (all but /api/v2/health); unset: no authentication")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--pipeline-metrics-url", callback=_pipeline_url,
              help="the Spark pipeline's Prometheus endpoint (spark-pipeline run --metrics-port), e.g. "
                   "http://127.0.0.1:9464/metrics; the console shows its batches and freshness")
@click.option("--log-format", type=click.Choice(logs.LOG_FORMATS), default="text", show_default=True,
              help="log lines as text or as JSON objects (docs/configuration.md#logging)")
def server(data_dir: Path, metadata_url: str | None, listen: str, server_id: str | None, lease_ttl: float,
           retry_initial: float, retry_max: float, healthy_after: float, delivery_timeout_ms: int,
           binlog_probe_interval: float, auth_token: str | None, log_level: str, pipeline_metrics_url: str | None,
           log_format: str) -> None:
    """Run changefeeds and serve the HTTP API (the CLI's other commands talk to it)."""
    host, port = _listen(listen)
    logs.configure(log_level, log_format)
    data_dir.mkdir(parents=True, exist_ok=True)
    url = metadata_url or f"sqlite:///{data_dir.resolve() / 'metadata.db'}"
    store = MetadataStore(url)
    metrics = Metrics()
    settings = OwnerSettings(lease_ttl=lease_ttl, backoff=Backoff(retry_initial, retry_max),
                             healthy_after=healthy_after, delivery_timeout_ms=delivery_timeout_ms,
                             binlog_probe_interval=binlog_probe_interval)
    if server_id:
        settings = dataclasses.replace(settings, server_id=server_id)
    owner = Owner(store, url, PipelineRunner, settings, metrics)
    owner.start()
    logging.getLogger(__name__).info("server %s: metadata %s, API on %s:%d", owner.server_id,
                                     url.split("@")[-1], host, port)
    if not auth_token and host not in ("127.0.0.1", "localhost", "::1"):
        logging.getLogger(__name__).warning("the API on %s:%d has no authentication: anyone who reaches it can"
                                            " change changefeeds; set --auth-token or LAKEFEED_API_TOKEN", host, port)
    try:
        app = build_app(store, metrics, pipeline_metrics_url=pipeline_metrics_url, auth_token=auth_token or None)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        owner.stop()
        store.close()
