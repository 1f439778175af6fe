"""canal-JSON as TiCDC emits it (pingcap/docs ticdc/ticdc-canal-json.md; tiflow
pkg/sink/codec/canal/canal_json_row_event_encoder.go and canal_json_message.go), for MySQL row
changes and DDL.

Row messages, in TiCDC's field order: id (0), database, table, pkNames (the primary key columns in
table column order, `[]` without a primary key), isDdl, type, es (commit time, ms), ts (encode time,
ms), sql (""), sqlType, mysqlType, old (UPDATE: the previous row; null otherwise), data (one row;
the old row for DELETE), and `_tidb` with enable-tidb-extension. VIRTUAL generated columns are left
out (TiCDC never sees them); STORED ones stay.

DDL and watermark messages are TiCDC's JSONMessage struct marshalled as is, so there `data` comes
before `old` (both null).

Options (TiCDC's, `docs/configuration.md`): content-compatible (full mysqlType; turns on
only-output-updated-columns as TiCDC's codec config does), only-output-updated-columns (UPDATE `old`
holds only the columns whose value changed), delete-only-output-handle-key-columns (DELETE `data`,
`sqlType`, `mysqlType` hold only the handle key columns). Lakefeed's one extension is the message
key (`message-key=handle-key`, the default): the row's handle key as JSON, so topics can be
compacted; `message-key=none` sends no key, as TiCDC does.

Strings are escaped as TiCDC's Go JSON writers (easyjson jwriter, goccy/go-json) escape them: `<`,
`>`, `&`, U+2028 and U+2029 as `\\u003c`, `\\u003e`, `\\u0026`, `\\u2028`, `\\u2029`, and backspace and
form feed as `\\u0008`, `\\u000c`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from changefeed.codec.base import DDLMessage, Encoded
from changefeed.codec.row_text import RowText, compile_row_text
from changefeed.codec.values import (
    Formatter,
    fast_path,
    java_sql_type,
    mysql_type,
    unsigned_promotion,
    value_formatter,
)  # fmt: skip
from changefeed.model import Column, DDLEvent, DDLKind, Row, RowChange, RowKind, TableSchema, tso_physical_ms

# tiflow canal_entry.go convertDdlEventType; everything else (views, sequences, database
# statements, EXCHANGE PARTITION) is QUERY.
DDL_TYPES = {
    DDLKind.CREATE_TABLE: "CREATE",
    DDLKind.ALTER_TABLE: "ALTER",
    DDLKind.DROP_TABLE: "ERASE",
    DDLKind.TRUNCATE_TABLE: "TRUNCATE",
    DDLKind.RENAME_TABLE: "RENAME",
    DDLKind.CREATE_INDEX: "CINDEX",
    DDLKind.DROP_INDEX: "DINDEX",
}
_DATABASE_KINDS = (DDLKind.CREATE_DATABASE, DDLKind.DROP_DATABASE, DDLKind.ALTER_DATABASE)


@dataclass(frozen=True)
class CanalJsonOptions:
    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False
    message_key: str = "handle-key"

    @property
    def updated_columns_only(self) -> bool:
        """TiCDC's codec config turns only-output-updated-columns on with content-compatible."""
        return self.only_output_updated_columns or self.content_compatible


def _now_ms() -> int:
    return int(time.time() * 1000)


_GO_ESCAPES = {b"<": b"\\u003c", b">": b"\\u003e", b"&": b"\\u0026", "\u2028".encode(): b"\\u2028",
               "\u2029".encode(): b"\\u2029", b"\\b": b"\\u0008", b"\\f": b"\\u000c"}
# Every backslash in orjson's output starts an escape pair. An escaped backslash is matched as a pair
# (and kept), so the `b` after it is not taken for `\b`; other pairs (`\"`, `\n`, `\u...`) are not
# matched at all: the character after their backslash cannot start a pair, and rare matches keep the
# rewrite cheap (JSON columns are full of `\"`).
_ESCAPE_TARGETS = re.compile(rb'\\[\\bf]|[<>&]|\xe2\x80[\xa8\xa9]')


def dumps(message: dict[str, Any]) -> bytes:
    """orjson's JSON with the escapes of Go's JSON writers. The replaced characters can only occur
    inside strings in orjson's output, so rewriting the bytes is safe."""
    raw = orjson.dumps(message)
    # Byte searches and replaces (memchr speed): the regex tries its alternatives at every byte and calls
    # back per match, tens of microseconds for a row with binary columns (their Latin-1 text is full of
    # `<`, `>` and `&`). Without `\b` or `\f` in the bytes, every backslash pair is one the rewrite keeps
    # (JSON columns are full of `\"`), and each character to rewrite stands for itself.
    if b"\\b" in raw or b"\\f" in raw:
        return _ESCAPE_TARGETS.sub(lambda m: _GO_ESCAPES.get(m.group(0), m.group(0)), raw)
    if b"<" in raw:
        raw = raw.replace(b"<", b"\\u003c")
    if b">" in raw:
        raw = raw.replace(b">", b"\\u003e")
    if b"&" in raw:
        raw = raw.replace(b"&", b"\\u0026")
    if b"\xe2\x80" in raw:
        raw = raw.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
    return raw


def visible_columns(table: TableSchema) -> tuple[Column, ...]:
    """The columns TiCDC sends: all but VIRTUAL generated ones (tiflow cdc/model IsColCDCVisible)."""
    return tuple(c for c in table.columns if not c.virtual)


_MAX_PLANS = 1024


@dataclass(frozen=True, slots=True)
class _TablePlan:
    """What a row message of one table schema version needs, chosen once (not per row): the columns
    sent with their value formatters, pkNames, mysqlType, sqlType (per row only for unsigned integer
    columns, whose code TiCDC promotes when the value leaves the signed range) and the key columns.
    The dicts are shared by every message of the table: orjson serialises them before the next row.
    `text` is `columns` compiled into one function (row_text.py)."""

    columns: tuple[tuple[str, Formatter], ...]
    text: RowText
    pk_names: list[str]
    sql_types: dict[str, int] | None
    promotions: tuple[tuple[str, int, int], ...]
    mysql_types: dict[str, str]
    key: tuple[tuple[str, Formatter], ...]

    @staticmethod
    def of(table: TableSchema, handle_only: bool, options: CanalJsonOptions) -> _TablePlan:
        visible = visible_columns(table)
        columns = visible
        if handle_only:
            key_names = set(table.handle_key or table.column_names)
            columns = tuple(c for c in visible if c.name in key_names)
        formatters = {c.name: value_formatter(c) for c in table.columns}
        promotions = tuple(
            (c.name, limit, wider) for c in columns if (p := unsigned_promotion(c)) is not None for limit, wider in [p]
        )
        handle = table.handle_key or tuple(c.name for c in visible)
        return _TablePlan(
            columns=tuple((c.name, formatters[c.name]) for c in columns),
            text=compile_row_text([(c.name, formatters[c.name], fast_path(c)) for c in columns]),
            pk_names=[c.name for c in visible if c.name in table.primary_key],
            sql_types={c.name: java_sql_type(c, None) for c in columns} or None,
            promotions=promotions,
            mysql_types={c.name: mysql_type(c, options.content_compatible) for c in columns},
            key=tuple((name, formatters[name]) for name in handle),
        )


class CanalJsonEncoder:
    """Implements changefeed.codec.base.Encoder."""

    def __init__(self, options: CanalJsonOptions | None = None, clock: Callable[[], int] = _now_ms) -> None:
        self.options = options or CanalJsonOptions()
        self._clock = clock
        self._plans: dict[tuple[str, str, bool], tuple[TableSchema, _TablePlan]] = {}

    def encode_row(self, change: RowChange) -> Encoded:
        handle_only = change.kind is RowKind.DELETE and self.options.delete_only_output_handle_key_columns
        tidb = {"commitTs": change.commit_ts} if self.options.enable_tidb_extension else None
        return self._encode(change, handle_only, tidb)

    def encode_handle_only(self, change: RowChange, claim_check_location: str | None = None) -> Encoded:
        """The row reduced to its key columns, flagged `_tidb.onlyHandleKey` (large-message-handle
        handle-key-only) or pointing at the full message (`_tidb.claimCheckLocation`, claim-check)."""
        tidb: dict[str, Any] = {"commitTs": change.commit_ts}
        if claim_check_location is None:
            tidb["onlyHandleKey"] = True
        else:
            tidb["claimCheckLocation"] = claim_check_location
        return self._encode(change, True, tidb)

    def _plan(self, table: TableSchema, handle_only: bool) -> _TablePlan:
        # One plan per table, for its newest schema object. The capture keeps one TableSchema per schema version
        # (its mounter's), so the identity check is the hot path. A new object is a new version, or the same
        # version handed over again (capture in a child process unpickles each batch's schema anew): an equal
        # schema keeps its plan.
        key = (table.schema, table.table, handle_only)
        entry = self._plans.get(key)
        if entry is not None and entry[0] is table:
            return entry[1]
        plan = entry[1] if entry is not None and entry[0] == table else _TablePlan.of(table, handle_only, self.options)
        if len(self._plans) >= _MAX_PLANS:  # tables seen, dropped ones included: bounded all the same
            self._plans.clear()
        self._plans[key] = (table, plan)
        return plan

    def _encode(self, change: RowChange, handle_only: bool, tidb: dict[str, Any] | None) -> Encoded:
        table = change.table
        plan = self._plan(table, handle_only)
        image = change.row
        old: list[dict[str, str | None]] | None = None
        if change.kind is RowKind.UPDATE and change.before is not None:
            before = change.before
            if self.options.updated_columns_only:
                old = [{n: f(before.get(n)) for n, f in plan.columns if before.get(n) != image.get(n)}]
            else:
                old = [plan.text(before)]
        sql_types = plan.sql_types
        if plan.promotions:
            sql_types = dict(sql_types or {})
            for name, limit, wider in plan.promotions:
                value = image.get(name)
                if isinstance(value, int) and value > limit:
                    sql_types[name] = wider
        message: dict[str, Any] = {
            "id": 0,
            "database": table.schema,
            "table": table.table,
            "pkNames": plan.pk_names,
            "isDdl": False,
            "type": change.kind.value,
            "es": tso_physical_ms(change.commit_ts),
            "ts": self._clock(),
            "sql": "",
            "sqlType": sql_types,
            "mysqlType": plan.mysql_types,
            "old": old,
            "data": [plan.text(image)],
        }
        if tidb is not None:
            message["_tidb"] = tidb
        return Encoded(self._key(table, plan, image), dumps(message))

    def row_key(self, table: TableSchema, row: Row) -> bytes | None:
        """Lakefeed's message key (message-key=handle-key); TiCDC sends none (message-key=none)."""
        return self._key(table, self._plan(table, False), row)

    def _key(self, table: TableSchema, plan: _TablePlan, row: Row) -> bytes | None:
        if self.options.message_key == "none":
            return None
        key = {name: f(row.get(name)) for name, f in plan.key}
        return dumps({"database": table.schema, "table": table.table, "key": key})

    def encode_ddl(self, event: DDLEvent) -> list[DDLMessage]:
        """The messages TiCDC sends for one DDL event: one per table it touches (its topic picked
        by that table); a RENAME one with the new name, sent to the old name's topic; a database
        statement one with table "" to the default topic; EXCHANGE PARTITION one for the
        partitioned table, sent to the other table's topic (TiCDC routes by the table before)."""
        kind = DDL_TYPES.get(event.kind, "QUERY")
        if event.kind is DDLKind.RENAME_TABLE:
            # ddl_events makes one event per pair, except that a single ALTER TABLE ... RENAME
            # or RENAME TABLE a TO b keeps its own SQL: (old, new).
            old, new = event.tables[0], event.tables[-1]
            return [DDLMessage(old, self._ddl(event, kind, new.schema, new.table))]
        if event.kind is DDLKind.OTHER and len(event.tables) == 2:  # only EXCHANGE PARTITION (ddl_events)
            partitioned, other = event.tables
            return [DDLMessage(other, self._ddl(event, kind, partitioned.schema, partitioned.table))]
        if not event.tables and event.kind in _DATABASE_KINDS:
            return [DDLMessage(None, self._ddl(event, kind, event.database, ""))]
        return [DDLMessage(t, self._ddl(event, kind, t.schema, t.table)) for t in event.tables]

    def _ddl(self, event: DDLEvent, kind: str, database: str, table: str) -> Encoded:
        message: dict[str, Any] = {
            "id": 0,
            "database": database,
            "table": table,
            "pkNames": None,
            "isDdl": True,
            "type": kind,
            "es": tso_physical_ms(event.commit_ts),
            "ts": self._clock(),
            "sql": event.sql,
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
        }
        if self.options.enable_tidb_extension:
            message["_tidb"] = {"commitTs": event.commit_ts, **_session_time_zone(event)}
        return Encoded(None, dumps(message))

    def encode_watermark(self, watermark_ts: int) -> Encoded:
        message = {
            "id": 0,
            "database": "",
            "table": "",
            "pkNames": None,
            "isDdl": False,
            "type": "TIDB_WATERMARK",
            "es": tso_physical_ms(watermark_ts),
            "ts": self._clock(),
            "sql": "",
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
            "_tidb": {"watermarkTs": watermark_ts},
        }
        return Encoded(None, dumps(message))


def split_key_changing_update(change: RowChange) -> list[RowChange]:
    """An UPDATE that changes the primary key (or the handle unique key) becomes DELETE + INSERT,
    as TiCDC does unless output-raw-change-event, so consumers keyed by PK see both rows."""
    if change.kind is not RowKind.UPDATE or change.before is None or change.after is None:
        return [change]
    key = change.table.handle_key
    if not key or all(change.before.get(k) == change.after.get(k) for k in key):
        return [change]
    delete = RowChange(
        RowKind.DELETE,
        change.table,
        change.before,
        None,
        change.commit_ts,
        change.position,
        change.ordinal,
        change.snapshot,
    )
    insert = RowChange(
        RowKind.INSERT,
        change.table,
        None,
        change.after,
        change.commit_ts,
        change.position,
        change.ordinal,
        change.snapshot,
    )
    return [delete, insert]


def _session_time_zone(event: DDLEvent) -> dict[str, str]:
    """Lakefeed's one addition to TiCDC's `_tidb`: `sessionTimeZone`, on a DDL whose binlog Query event says
    it used the session's time zone (other than the server's `SYSTEM` one). MySQL fills the existing rows of
    `ADD COLUMN c DATETIME DEFAULT CURRENT_TIMESTAMP` with the DDL's time in that zone, and reads TIMESTAMP
    literals in it; TiCDC's message cannot say so (pingcap/tiflow#11368), and a consumer would be hours off."""
    zone = event.time_zone
    return {"sessionTimeZone": zone} if zone and zone.upper() != "SYSTEM" else {}
