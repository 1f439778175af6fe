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
from changefeed.model import Checkpoint, Position, TableName, compose_tso
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings, list_tables, session
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
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidDefinition("target", f"target {text!r} is neither a TSO number nor an ISO-8601 time such "
                                "as 2026-01-02T03:04:05Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return compose_tso(int(moment.timestamp() * 1000), 0)


def parse_position(text: str, field: str) -> Position:
    match = _POSITION.match(text)
    if not match:
        raise InvalidDefinition(field, f"{field} {text!r} is not allowed; use 'now' or a binlog position "
                                "FILE:POS such as mysql-bin.000003:4")
    return Position(match["file"], int(match["pos"]))


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
    explicit = None if start in (None, "", "now") else parse_position(start, "start")
    now_ts = compose_tso(int(time.time() * 1000), 0)
    if target_ts is not None and target_ts <= now_ts and explicit is None:
        raise InvalidDefinition("target", f"target {target} is not in the future; a changefeed starting now "
                                "would finish at once")
    warnings: tuple[str, ...] = ()
    position = explicit or Position("", 0)
    if check_services:
        try:
            here = start_position(settings)  # also checks binlog settings and the user's grants
        except ChangefeedError as exc:
            raise InvalidDefinition("source", f"source {settings.host}:{settings.port}: {exc}",
                                    retriable=exc.retriable) from exc
        except pymysql.err.MySQLError as exc:  # e.g. 1045 access denied: the driver's text says it best
            raise InvalidDefinition("source", f"source {settings.host}:{settings.port}: {exc.args[-1]}; "
                                    "check the user and password in the source URI") from exc
        position = explicit or here
        warnings = check_eligible_tables(settings, config.change_filter(source_database(source)),
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
