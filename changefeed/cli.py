"""The `changefeed` command line: `changefeed server` runs changefeeds; the other commands are clients
of its HTTP API (docs/changefeed.md).

Exit codes: 0 ok; 1 the server rejected the request (invalid definition, or a missing or wrong
--auth-token / LAKEFEED_API_TOKEN; the message says why);
2 usage error; 3 no such changefeed; 4 not allowed in the current state, or the id exists;
5 the server could not be reached or answered unexpectedly.
"""

from __future__ import annotations

import importlib
import json
import ssl
import sys
from pathlib import Path
from typing import Any, ClassVar

import click

from changefeed.lifecycle.client import ServerUnreachable, call, tls_context

EXIT_REJECTED, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_UNREACHABLE = 1, 3, 4, 5
_EXIT_BY_STATUS = {400: EXIT_REJECTED, 401: EXIT_REJECTED, 404: EXIT_NOT_FOUND, 409: EXIT_CONFLICT}
DEFAULT_SERVER = "http://127.0.0.1:8300"


class _LazyGroup(click.Group):
    """Subcommands imported when they run (click's "Lazily Loading Subcommands"): `changefeed server` brings
    uvicorn, FastAPI, SQLAlchemy and capture (~0.8 s of imports), which a client command never needs."""

    _lazy: ClassVar[dict[str, tuple[str, str]]] = {"server": ("changefeed.server_cli", "server")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self._lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            module, name = self._lazy[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), name)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="changefeed")
@click.option("--auth-token", envvar="LAKEFEED_API_TOKEN", show_envvar=True,
              help="bearer token the client commands send to the server (its --auth-token)")
@click.option("--ca", envvar="LAKEFEED_API_CA", show_envvar=True, type=click.Path(exists=True, dir_okay=False),
              help="PEM CA that signed an https:// server's certificate (default: the system's trust store)")
@click.option("--cert", envvar="LAKEFEED_API_CERT", show_envvar=True, type=click.Path(exists=True, dir_okay=False),
              help="PEM client certificate (chain) for a server started with --tls-client-ca")
@click.option("--key", envvar="LAKEFEED_API_KEY", show_envvar=True, type=click.Path(exists=True, dir_okay=False),
              help="PEM private key of --cert (when not in the same file)")
@click.pass_context
def main(ctx: click.Context, auth_token: str | None, ca: str | None, cert: str | None, key: str | None) -> None:
    """Run and control changefeeds (MySQL binlog -> canal-JSON -> Kafka)."""
    try:
        tls = tls_context(ca, cert, key) if (ca or cert) else None
    except (OSError, ssl.SSLError) as exc:
        raise click.BadParameter(f"cannot load the TLS files ({exc})", param_hint="--ca/--cert/--key") from exc
    ctx.obj = {"auth_token": auth_token, "tls": tls}


def _server_option(f: Any) -> Any:
    return click.option("--server", default=DEFAULT_SERVER, show_default=True, envvar="CHANGEFEED_SERVER",
                        help="URL of a changefeed server")(f)


def _output_option(f: Any) -> Any:
    return click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table",
                        show_default=True)(f)


def _id_option(f: Any) -> Any:
    return click.option("--changefeed-id", "-c", required=True, help="the changefeed's id")(f)


def _request(server: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    try:
        options = click.get_current_context().find_root().obj or {}
        status, payload = call(server, method, path, body, token=options.get("auth_token"), tls=options.get("tls"))
    except ServerUnreachable as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_UNREACHABLE)
    if status >= 400:
        message = payload.get("message", payload) if isinstance(payload, dict) else payload
        click.echo(f"Error: {message}", err=True)
        sys.exit(_EXIT_BY_STATUS.get(status, EXIT_UNREACHABLE))
    return payload


def _print(payload: Any, output: str, columns: tuple[str, ...] | None = None) -> None:
    if output == "json":
        click.echo(json.dumps(payload, indent=2))
        return
    rows = payload if isinstance(payload, list) else [payload]
    if columns is None:  # one object: key/value lines
        for key, value in payload.items():
            click.echo(f"{key:<18} {_cell(value)}")
        return
    table = [columns, *[tuple(_cell(_pick(row, c)) for c in columns) for row in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    for line in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())


def _pick(row: dict[str, Any], column: str) -> Any:
    value: Any = row
    for part in column.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


_LIST_COLUMNS = ("id", "state", "checkpoint.commit_time", "checkpoint_time", "owner", "error.message")


@main.command("create")
@_server_option
@_id_option
@click.option("--source", required=True, help="mysql://user:password@host:port[?tls=false]")
@click.option("--sink-uri", required=True, help="kafka://host:port/topic?partition-num=3&...")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="changefeed config (YAML)")
@click.option("--start", default="now", show_default=True,
              help="'now' (with snapshot-mode initial: copy the tables, then follow the binlog), a binlog "
                   "position FILE:POS that the source still has, at the start of an event, a time "
                   "(ISO-8601, UTC unless a zone is given, or a TSO): every transaction from then on, or "
                   "gtid:SET (MariaDB gtid:0-1-100, MySQL gtid:UUID:1-100): every transaction not in SET")
@click.option("--target", help="stop (state finished) at this TSO or ISO-8601 time")
@_output_option
def create(server: str, changefeed_id: str, source: str, sink_uri: str, config_path: Path | None, start: str,
           target: str | None, output: str) -> None:
    """Create a changefeed; every check (source, sink, config) runs before it is stored."""
    body = {"changefeed_id": changefeed_id, "source": source, "sink_uri": sink_uri, "start": start,
            "config": config_path.read_text(encoding="utf-8") if config_path else ""}
    if target:
        body["target"] = target
    payload = _request(server, "POST", "/api/v2/changefeeds", body)
    for warning in payload.get("warnings", []):
        click.echo(f"Warning: {warning}", err=True)
    _print(payload, output)


@main.command("list")
@_server_option
@click.option("--all", "show_all", is_flag=True, help="include finished changefeeds")
@_output_option
def list_(server: str, show_all: bool, output: str) -> None:
    """List changefeeds with state and checkpoint."""
    _print(_request(server, "GET", f"/api/v2/changefeeds?all={'true' if show_all else 'false'}"), output,
           _LIST_COLUMNS)


@main.command("query")
@_server_option
@_id_option
@click.option("--simple", "-s", is_flag=True, help="only state, checkpoint and last error")
@_output_option
def query(server: str, changefeed_id: str, simple: bool, output: str) -> None:
    """Show one changefeed: definition, state, checkpoint, last error and next retry."""
    payload = _request(server, "GET", f"/api/v2/changefeeds/{changefeed_id}")
    if simple:
        payload = {k: payload[k] for k in ("id", "state", "checkpoint", "checkpoint_time", "error", "next_retry")}
    _print(payload, output)


@main.command("statistics")
@_server_option
@_id_option
@_output_option
def statistics(server: str, changefeed_id: str, output: str) -> None:
    """Rows/s, bytes/s per table, checkpoint time and lag."""
    payload = _request(server, "GET", f"/api/v2/changefeeds/{changefeed_id}/statistics")
    if output == "json":
        _print(payload, output)
        return
    click.echo(f"changefeed {payload['id']}  state {payload['state']}  checkpoint {payload['checkpoint_time']}  "
               f"lag {_cell(payload['checkpoint_lag_seconds'])} s")
    tables = [{"table": name, **values} for name, values in sorted(payload["tables"].items())]
    _print(tables, "table", ("table", "rows", "rows_per_second", "bytes", "bytes_per_second"))


def _simple_command(name: str, method: str, suffix: str, help_text: str) -> None:
    @main.command(name, help=help_text)
    @_server_option
    @_id_option
    @_output_option
    def command(server: str, changefeed_id: str, output: str) -> None:
        _print(_request(server, method, f"/api/v2/changefeeds/{changefeed_id}{suffix}"), output)


_simple_command("pause", "POST", "/pause", "Stop a changefeed (state stopped); its checkpoint stays.")
_simple_command("remove", "DELETE", "", "Remove a changefeed and its metadata.")


@main.command("resume")
@_server_option
@_id_option
@click.option("--overwrite-checkpoint",
              help="restart from this binlog position FILE:POS, time or gtid:SET instead (checked like "
                   "create --start)")
@_output_option
def resume(server: str, changefeed_id: str, overwrite_checkpoint: str | None, output: str) -> None:
    """Resume a stopped, warning or failed changefeed from its checkpoint."""
    body = {"overwrite_checkpoint": overwrite_checkpoint} if overwrite_checkpoint else {}
    _print(_request(server, "POST", f"/api/v2/changefeeds/{changefeed_id}/resume", body), output)


@main.command("update")
@_server_option
@_id_option
@click.option("--sink-uri", help="new sink URI")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="new changefeed config (YAML)")
@click.option("--target", help="new target TSO or ISO-8601 time ('' clears it)")
@_output_option
def update(server: str, changefeed_id: str, sink_uri: str | None, config_path: Path | None, target: str | None,
           output: str) -> None:
    """Change a stopped or failed changefeed; resume it afterwards."""
    body: dict[str, Any] = {}
    if sink_uri is not None:
        body["sink_uri"] = sink_uri
    if config_path is not None:
        body["config"] = config_path.read_text(encoding="utf-8")
    if target is not None:
        body["target"] = target or None
    if not body:
        raise click.UsageError("nothing to update: give --sink-uri, --config or --target")
    _print(_request(server, "PUT", f"/api/v2/changefeeds/{changefeed_id}", body), output)


if __name__ == "__main__":
    main()
