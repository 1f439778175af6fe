"""Validate a changefeed definition for real before it is stored: nothing is half-created.

Order matters: everything that needs no network first (id, URIs, config, positions), then the
source server (settings, grants, current position), then the sink (topic checks, which may create
the topic: harmless, as the same definition would create it again). Only then is the row written.
"""

from __future__ import annotations

import datetime
import re
import time
from dataclasses import dataclass

import pymysql

from changefeed.config import ChangefeedConfig, load_config
from changefeed.dispatch.topic import check_topic_expression
from changefeed.errors import ChangefeedError, ConfigError
from changefeed.filter import ChangeFilter
from changefeed.lifecycle.source_uri import parse_source_uri, source_database
from changefeed.model import Checkpoint, Position, TableName, compose_tso, tso_physical_ms
from changefeed.source.binlog_positions import check_start_position
from changefeed.source.capture import NO_POSITION, start_position
from changefeed.source.server import ConnectionSettings, list_tables, session
from changefeed.source.start_time import position_at_time
from sink.errors import SinkError
from sink.kafka import prepare_topic
from sink.uri import KafkaSinkConfig, parse_sink_uri

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_POSITION = re.compile(r"^(?P<file>[^:\s]+):(?P<pos>\d+)$")


class InvalidDefinition(ChangefeedError):
    """The definition is wrong; `field` names the part (changefeed_id, source, sink_uri, config, ...)."""

    def __init__(self, field: str, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.field = field
        self.retriable = retriable


@dataclass(frozen=True)
class Definition:
    changefeed_id: str
    source: str
    sink_uri: str
    config_text: str
    config: ChangefeedConfig
    start: Checkpoint
    target_ts: int | None
    warnings: tuple[str, ...] = ()


def check_id(cf_id: str) -> None:
    if not ID_PATTERN.match(cf_id):
        raise InvalidDefinition("changefeed_id", f"changefeed id {cf_id!r} is not allowed; use 1-128 letters, "
                                "digits, '-' or '_', starting with a letter or digit")


def parse_target(text: str | None) -> int | None:
    """A TSO number or an ISO-8601 time (UTC if no zone) -> commit timestamp to stop at."""
    if text is None or text == "":
        return None
    tso = parse_moment(text)
    if tso is None:
        raise InvalidDefinition("target", f"target {text!r} is neither a TSO number nor an ISO-8601 time such "
                                "as 2026-01-02T03:04:05Z")
    return tso


def parse_moment(text: str) -> int | None:
    """A TSO number or an ISO-8601 time (UTC if no zone) -> TSO; None when it is neither."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return compose_tso(int(moment.timestamp() * 1000), 0)


def parse_config_text(text: str) -> ChangefeedConfig:
    try:
        return load_config(text)
    except ConfigError as exc:
        raise InvalidDefinition("config", f"config: {exc}") from exc


def validate(cf_id: str, source: str, sink_uri: str, config_text: str, start: str | None,
             target: str | None, *, check_services: bool = True) -> Definition:
    check_id(cf_id)
    try:
        settings = parse_source_uri(source)
    except ConfigError as exc:
        raise InvalidDefinition("source", str(exc)) from exc
    try:
        sink_config = parse_sink_uri(sink_uri)
    except SinkError as exc:
        raise InvalidDefinition("sink_uri", str(exc)) from exc
    config = parse_config_text(config_text)
    check_sink_topic(sink_config)
    target_ts = parse_target(target)
    explicit = None if start in (None, "", "now") else parse_start(start, "start")
    warnings: tuple[str, ...] = start_warnings(config, start, explicit)
    now_ts = compose_tso(int(time.time() * 1000), 0)
    if target_ts is not None and target_ts <= now_ts and explicit is None:
        raise InvalidDefinition("target", f"target {target} is not in the future; a changefeed starting now "
                                "would finish at once")
    if not check_services:
        position = unchecked_start(explicit, "start")
    else:
        try:
            here = start_position(settings)  # also checks binlog settings and the user's grants
        except ChangefeedError as exc:
            raise InvalidDefinition("source", f"source {settings.host}:{settings.port}: {exc}",
                                    retriable=exc.retriable) from exc
        except pymysql.err.MySQLError as exc:  # e.g. 1045 access denied: the driver's text says it best
            raise InvalidDefinition("source", f"source {settings.host}:{settings.port}: {exc.args[-1]}; "
                                    "check the user and password in the source URI") from exc
        position = first_position(config, here) if explicit is None else resolve_start(settings, explicit, "start")
        warnings += check_eligible_tables(settings, config.change_filter(source_database(source)),
                                          config.force_replicate)
        try:
            warnings += prepare_topic(sink_config).warnings
        except SinkError as exc:
            raise InvalidDefinition("sink_uri", str(exc), retriable=exc.retriable) from exc
    return Definition(cf_id, source, sink_uri, config_text, config, Checkpoint(position, now_ts), target_ts,
                      warnings)


def check_sink_topic(sink_config: KafkaSinkConfig) -> None:
    """The sink URI's topic is the default topic expression: its placeholders are checked like the
    dispatchers' (at create, not at the first row)."""
    try:
        check_topic_expression(sink_config.topic)
    except ConfigError as exc:
        raise InvalidDefinition("sink_uri", f"sink URI topic: {exc}") from exc


_KEYED_TABLES = (
    # Tables with a primary key or a unique key whose every part is a NOT NULL column (a functional
    # key part has no column: it counts as nullable).
    "SELECT DISTINCT s.TABLE_SCHEMA, s.TABLE_NAME FROM information_schema.STATISTICS s "
    "LEFT JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = s.TABLE_SCHEMA "
    "AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME "
    "WHERE s.NON_UNIQUE = 0 AND s.TABLE_SCHEMA IN ({schemas}) "
    "GROUP BY s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME "
    "HAVING SUM(c.IS_NULLABLE IS NULL OR c.IS_NULLABLE = 'YES') = 0")
_LISTED = 20


def ineligible_tables(settings: ConnectionSettings, change_filter: ChangeFilter) -> list[TableName]:
    """Captured tables with neither a primary key nor a NOT NULL unique key (TiCDC's "ineligible
    tables": their rows have no key to identify them downstream)."""
    with session(settings) as cur:
        captured = [t for t in list_tables(cur) if change_filter.keeps_table(t)]
        if not captured:
            return []
        schemas = sorted({t.schema for t in captured})
        cur.execute(_KEYED_TABLES.format(schemas=", ".join(["%s"] * len(schemas))), schemas)
        keyed = {TableName(str(schema), str(table)) for schema, table in cur.fetchall()}
    return [t for t in captured if t not in keyed]


def check_eligible_tables(settings: ConnectionSettings, change_filter: ChangeFilter,
                          force_replicate: bool) -> tuple[str, ...]:
    """Refuse ineligible tables unless force-replicate (TiCDC docs, "force-replicate"); with it, the
    returned warning names them."""
    try:
        tables = ineligible_tables(settings, change_filter)
    except ChangefeedError as exc:
        raise InvalidDefinition("source", f"source {settings.host}:{settings.port}: {exc}",
                                retriable=exc.retriable) from exc
    if not tables:
        return ()
    names = ", ".join(str(t) for t in tables[:_LISTED]) + (
        f" and {len(tables) - _LISTED} more" if len(tables) > _LISTED else "")
    if force_replicate:
        return (f"force-replicate: capturing {len(tables)} table(s) without a primary key or NOT NULL unique "
                f"key: {names}; their messages carry no key (pkNames empty), and the Spark pipeline stops on "
                "them: add a primary key or keep them out of the pipeline's topics",)
    raise InvalidDefinition(
        "config", f"ineligible tables (no primary key and no NOT NULL unique key): {names}; add a primary key, "
        "exclude them with a filter rule such as '!db.table', or set force-replicate: true in the changefeed "
        "config to capture them anyway")


# --- where a changefeed starts ----------------------------------------------------------------


def parse_start(text: str, field: str) -> Position | int:
    """A binlog position FILE:POS, or a time (ISO-8601, UTC if no zone, or a TSO number) as unix seconds."""
    match = _POSITION.match(text)
    if match:
        return Position(match["file"], int(match["pos"]))
    tso = parse_moment(text)
    if tso is None:
        raise InvalidDefinition(field, f"{field} {text!r} is not allowed; use 'now', a binlog position FILE:POS "
                                "such as mysql-bin.000003:4, or a time: ISO-8601 such as 2026-01-02T03:04:05Z "
                                "(UTC unless a zone is given) or a TSO number")
    seconds = tso_physical_ms(tso) // 1000
    if seconds > time.time():
        raise InvalidDefinition(field, f"{field} {text!r} is in the future; use 'now' or a past time")
    return seconds


def resolve_start(settings: ConnectionSettings, start: Position | int, field: str) -> Position:
    """The checked binlog position of an explicit start: a position as given, a time looked up."""
    try:
        if isinstance(start, Position):
            return check_start_position(settings, start)
        return position_at_time(settings, start)
    except ChangefeedError as exc:
        shown = f"{start.file}:{start.pos}" if isinstance(start, Position) else _utc(start)
        raise InvalidDefinition(field, f"{field} {shown}: {exc}", retriable=exc.retriable) from exc


def unchecked_start(start: Position | int | None, field: str) -> Position:
    """The start when the source is not consulted (tests of the API alone): a time cannot be looked up."""
    if start is None:
        return NO_POSITION
    if isinstance(start, Position):
        return start
    raise InvalidDefinition(field, f"{field}: a start time needs the source's binlog to be looked up")


def _utc(unix_seconds: int) -> str:
    return datetime.datetime.fromtimestamp(unix_seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def start_warnings(config: ChangefeedConfig, text: str | None, explicit: Position | int | None
                   ) -> tuple[str, ...]:
    """A snapshot is taken only by a changefeed starting 'now'; an explicit start means 'from there'."""
    if explicit is None:
        return ()
    if config.snapshot_mode == "initial_only":
        raise InvalidDefinition("start", f"start {text} does not go with snapshot-mode 'initial_only', which "
                                "only copies the tables as they are now; use start 'now'")
    if config.snapshot_mode == "initial":
        return (f"snapshot-mode 'initial' is not used with start {text}: the changefeed reads the binlog from "
                "there without copying the tables; use start 'now' for a snapshot",)
    return ()


def first_position(config: ChangefeedConfig, here: Position) -> Position:
    """The first checkpoint's position for a changefeed starting 'now' (`here`: the server's current
    position). With a snapshot it is NO_POSITION: the runner takes the snapshot, and the snapshot's
    consistent position becomes the checkpoint once acknowledged; storing `here` instead would make the
    runner stream from it and never copy the rows that already exist."""
    return here if config.snapshot_mode == "never" else NO_POSITION


def overwrite_checkpoint(source: str, text: str, *, check_services: bool = True) -> Checkpoint:
    """`resume --overwrite-checkpoint FILE:POS|TIME` for a changefeed reading `source`, checked like
    `--start`."""
    start = parse_start(text, "overwrite_checkpoint")
    if not check_services:
        return Checkpoint(unchecked_start(start, "overwrite_checkpoint"), compose_tso(int(time.time() * 1000), 0))
    try:
        settings = parse_source_uri(source)
    except ConfigError as exc:
        raise InvalidDefinition("source", str(exc)) from exc
    position = resolve_start(settings, start, "overwrite_checkpoint")
    return Checkpoint(position, compose_tso(int(time.time() * 1000), 0))
