"""The `broker` command line."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if __name__ == "__main__":
    # kio imports hypothesis (and with it pytest and trio) when it is installed, for test strategies the broker
    # never uses: where the dev extra is installed that was 0.3-0.7 s of every `python -m broker.cli` start
    # (0.14 s without it). A None entry makes kio's guarded import fail as if hypothesis were absent. Only for a
    # process that runs this module: a test process that imports it keeps hypothesis.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]  # None: "import halted" (the import system)

from broker.config import BrokerConfig, ConfigError, load_file, parse_set
from broker.config_checks import check_broker_properties
from lakefeed_common import logs

if TYPE_CHECKING:
    from broker.storage.store import DiskLogStore

log = logging.getLogger("broker.cli")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="broker")
def main() -> None:
    """The bundled Kafka-compatible broker."""


@main.command()
@click.option(
    "--data-dir", type=click.Path(file_okay=False, path_type=Path), help="Where topics and data live (log.dirs)."
)
@click.option("--listeners", help="PLAINTEXT://HOST:PORT to listen on (Kafka's `listeners`).")
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="server.properties (k=v) or YAML file with Kafka property names.",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override one property; repeatable.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve Prometheus metrics at http://HOST:PORT/metrics (metrics.port; HOST is the listener's).")
@click.option("--log-level", default="INFO", show_default=True, help="Log level (on stderr).")
@click.option("--log-format", type=click.Choice(logs.LOG_FORMATS), default="json", show_default=True,
              help="Log lines as JSON objects or as text (docs/configuration.md#logging).")
@click.option("--event-loop", type=click.Choice(["auto", "uvloop", "asyncio"]), default="auto", show_default=True,
              help="auto: uvloop where it is installed, else asyncio's loop (docs/broker.md#event-loop).")
def start(
    data_dir: Path | None, listeners: str | None, config_file: Path | None, overrides: tuple[str, ...],
    metrics_port: int | None, log_level: str, log_format: str, event_loop: str,
) -> None:
    """Run the broker until SIGTERM or SIGINT."""
    logs.configure(log_level, log_format)
    from broker.storage.store import DiskLogStore

    runner, loop_name = _event_loop_runner(event_loop)  # a usage error before anything is written
    try:
        properties = load_file(config_file) if config_file else {}
        properties.update(parse_set(overrides))
        if data_dir is not None:
            properties["log.dirs"] = str(data_dir)
        if listeners is not None:
            properties["listeners"] = listeners
        if metrics_port is not None:
            properties["metrics.port"] = str(metrics_port)
        check_broker_properties(properties)
        config = BrokerConfig().with_overrides(properties)
        config.listener  # noqa: B018 - validate before starting
        # Partitions live on disk as Kafka lays them out (<data dir>/<topic>-<partition>/), so they survive
        # restarts; the store locks the directory against a second broker.
        store = DiskLogStore(config.data_dir)
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    log.info("event loop: %s", loop_name)
    sys.exit(runner(_serve(config, store)))


def _event_loop_runner(choice: str) -> tuple[Any, str]:
    """The loop's runner and how the start-up log names it. uvloop (a pinned dependency on Linux and macOS):
    libuv's loop in C reads requests and writes answers in fewer Python steps than asyncio's selector loop
    (docs/benchmarks.md, "uvloop"). Where it is not installed (Windows has no build) `auto` runs on asyncio's
    loop, and says so; `uvloop` then refuses to start."""
    if choice == "asyncio":
        return asyncio.run, "asyncio (--event-loop asyncio)"
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise click.UsageError("--event-loop uvloop: uvloop is not installed (pip install uvloop, or use "
                                   "--event-loop auto to fall back to asyncio's loop)") from None
        return asyncio.run, "asyncio (uvloop is not installed)"
    return uvloop.run, f"uvloop {importlib.metadata.version('uvloop')}"


async def _serve(config: BrokerConfig, store: DiskLogStore) -> int:
    from broker.server import BrokerServer

    server = BrokerServer(config, store)
    node = None
    if config.get("controller.quorum.voters"):
        from broker.cluster.member import ClusterMember
        from broker.cluster.node import ClusterNode
        from broker.cluster.security_stores import ClusterAclStore, ClusterCredentialStore

        try:
            node = ClusterNode(config, server.state)
            server.state.role = ClusterMember(node)
            server.security.use_stores(ClusterCredentialStore(node), ClusterAclStore(node))
        except ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)  # from here on, also while waiting to join the cluster
    try:
        if node is not None:
            await node.start()
            log.info("joining the cluster: waiting for the controller quorum and the metadata")
            await _first_of(node.ready.wait(), stop.wait())
        if not stop.is_set():
            await server.start()
    except OSError as exc:
        click.echo(f"error: cannot listen on {config.get('listeners')} or the controller port: {exc}", err=True)
        if node is not None:
            await node.close()
        return 1
    await stop.wait()
    # A second SIGTERM/Ctrl-C means "now": exit without the clean-shutdown markers; the next start
    # recovers the logs as after a crash, so nothing acknowledged is lost.
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _exit_now)
    log.info("stopping")
    if node is not None:
        await node.close()  # controlled shutdown: leaderships move before the port closes
    await server.close()  # closes the store: flush, clean-shutdown markers
    return 0


async def _first_of(*waits: Coroutine[Any, Any, Any]) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()


def _exit_now() -> None:
    log.warning("second stop signal: exiting without a clean shutdown (the next start recovers the logs)")
    logging.shutdown()
    os._exit(1)


@main.command("dev-cluster")
@click.option("--nodes", type=int, default=3, show_default=True, help="How many broker processes.")
@click.option("--data-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Holds node-N/ data dirs, node-N.log and cluster.json.")
@click.option("--base-port", type=int, default=9092, show_default=True,
              help="Node i listens on BASE+i-1 (Kafka) and BASE+NODES+i-1 (controller).")
@click.option("--rack-count", type=int, default=None, help="Spread nodes over this many racks (broker.rack).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Property for every node; repeatable.")
@click.option("--restart/--no-restart", default=False, show_default=True,
              help="Start a node that died again on its data dir (otherwise it is reported and stays down).")
@click.option("--metrics-port", type=int, default=None,
              help="Node i serves Prometheus metrics on METRICS_PORT+i-1 (default: none).")
@click.option("--listener-names", default="PLAINTEXT", show_default=True, metavar="NAME,...",
              help="Each node's Kafka listeners: the first on BASE+i-1, listener k on BASE+(k+1)*NODES+i-1; map"
              " them with --set listener.security.protocol.map=... (e.g. CLIENT:SASL_SSL,INTERNAL:SSL).")
def dev_cluster(
    nodes: int, data_dir: Path, base_port: int, rack_count: int | None, overrides: tuple[str, ...], restart: bool,
    metrics_port: int | None, listener_names: str,
) -> None:
    """Run a local cluster of NODES brokers in the foreground until Ctrl-C."""
    from broker.dev_cluster import DevCluster, DevClusterError

    names = tuple(name.strip() for name in listener_names.split(",") if name.strip())
    try:
        cluster = DevCluster(nodes, data_dir, base_port, rack_count, parse_set(overrides), metrics_port=metrics_port,
                             listener_names=names)
        sys.exit(cluster.run_foreground(restart))
    except (DevClusterError, ConfigError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


@main.command("dump-log-segments")
@click.option("--files", "files", required=True, multiple=True,
              help="A .log, .index, .timeindex, .txnindex or .snapshot file; repeatable (comma-separated also"
                   " accepted).")
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batch headers.")
@click.option("--print-data-log", is_flag=True, help="Print record keys and payloads (implies --deep-iteration).")
def dump_log_segments(files: tuple[str, ...], deep_iteration: bool, print_data_log: bool) -> None:
    """Print segment files as Kafka's kafka-dump-log (DumpLogSegments) does."""
    from broker.storage.dump import dump_file

    try:
        for path in (Path(name) for group in files for name in group.split(",") if name):
            for line in dump_file(path, deep_iteration, print_data_log):
                click.echo(line)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc


if __name__ == "__main__":
    main()
