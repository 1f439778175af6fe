"""`changefeed server`: the owner loop plus the HTTP API in one process."""

from __future__ import annotations

import dataclasses
import logging
import ssl
from pathlib import Path
from typing import Any

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


def _tls_settings(cert: str | None, key: str | None, client_ca: str | None) -> dict[str, Any]:
    """uvicorn's TLS arguments, checked before anything starts: a certificate and key that do not load, or a
    client CA without a certificate, is a usage error naming the option."""
    if not cert:
        if key or client_ca:
            raise click.UsageError("--tls-key and --tls-client-ca need --tls-cert")
        return {}
    try:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        if client_ca:
            context.load_verify_locations(client_ca)
    except (OSError, ssl.SSLError) as exc:
        raise click.BadParameter(f"cannot load them ({exc}); give PEM files", param_hint="--tls-cert/--tls-key/"
                                 "--tls-client-ca") from exc
    settings: dict[str, Any] = {"ssl_certfile": cert, "ssl_keyfile": key}
    if client_ca:
        settings |= {"ssl_ca_certs": client_ca, "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return settings


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
@click.option("--tls-cert", envvar="LAKEFEED_API_TLS_CERT", show_envvar=True,
              type=click.Path(exists=True, dir_okay=False), help="PEM certificate chain: serve the API and the"
              " console over HTTPS (with --tls-key)")
@click.option("--tls-key", envvar="LAKEFEED_API_TLS_KEY", show_envvar=True,
              type=click.Path(exists=True, dir_okay=False), help="PEM private key of --tls-cert")
@click.option("--tls-client-ca", envvar="LAKEFEED_API_TLS_CLIENT_CA", show_envvar=True,
              type=click.Path(exists=True, dir_okay=False),
              help="PEM CA: every client must present a certificate it signed (mutual TLS; needs --tls-cert)")
@click.option("--log-level", default="INFO", show_default=True)
@click.option("--pipeline-metrics-url", callback=_pipeline_url,
              help="the Spark pipeline's Prometheus endpoint (spark-pipeline run --metrics-port), e.g. "
                   "http://127.0.0.1:9464/metrics; the console shows its batches and freshness")
@click.option("--log-format", type=click.Choice(logs.LOG_FORMATS), default="text", show_default=True,
              help="log lines as text or as JSON objects (docs/configuration.md#logging)")
def server(data_dir: Path, metadata_url: str | None, listen: str, server_id: str | None, lease_ttl: float,
           retry_initial: float, retry_max: float, healthy_after: float, delivery_timeout_ms: int,
           binlog_probe_interval: float, auth_token: str | None, tls_cert: str | None, tls_key: str | None,
           tls_client_ca: str | None, log_level: str, pipeline_metrics_url: str | None, log_format: str) -> None:
    """Run changefeeds and serve the HTTP API (the CLI's other commands talk to it)."""
    host, port = _listen(listen)
    tls = _tls_settings(tls_cert, tls_key, tls_client_ca)
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
    if host not in ("127.0.0.1", "localhost", "::1"):
        if not auth_token and not tls_client_ca:
            logging.getLogger(__name__).warning(
                "the API on %s:%d has no authentication: anyone who reaches it can change changefeeds; set"
                " --auth-token or LAKEFEED_API_TOKEN (or --tls-client-ca)", host, port)
        if not tls:
            logging.getLogger(__name__).warning(
                "the API on %s:%d is plain HTTP: tokens and source URIs cross the network readable; set --tls-cert"
                " and --tls-key, or put a TLS proxy in front", host, port)
    try:
        app = build_app(store, metrics, pipeline_metrics_url=pipeline_metrics_url, auth_token=auth_token or None)
        # asyncio's loop, named: uvicorn's "auto" would take uvloop now that the broker pins it, and this
        # server's work is its changefeeds' threads, not HTTP (the loop change was measured for the broker).
        uvicorn.run(app, host=host, port=port, log_level="warning", loop="asyncio", **tls)
    finally:
        owner.stop()
        store.close()
