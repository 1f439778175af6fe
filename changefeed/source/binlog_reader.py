"""Read the binlog with python-mysql-replication (the only module importing it) as neutral records.

Positions: every record carries the position *after* its event (the library's `log_pos`), so a
CommitRecord's position is exactly where to resume after that transaction. GTID state is tracked
per event group so a checkpoint can also resume by GTID (MariaDB `domain-server-seq` lists, MySQL
GTID sets).

Library quirks fixed here, where the raw bytes are still at hand: negative TIME values with a
fractional part (see `_read_time2`) and the custom ("opaque") scalars of MySQL binary JSON (see
`_json_opaque`). The others are fixed on decoded values in `mounter`.
"""

from __future__ import annotations

import base64
import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any

from pymysqlreplication import BinLogStreamReader, binlogstream, json_binary
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.event import (
    ExecuteLoadQueryEvent,
    GtidEvent,
    HeartbeatLogEvent,
    MariadbGtidEvent,
    NotImplementedEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from pymysqlreplication.gtid import GtidSet
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from pymysqlreplication.util.bytes import decode_decimal, decode_variable_length

from changefeed.errors import ConfigError, ServerConfigError
from changefeed.model import Position, RowKind
from changefeed.source.column_types import charset_of_collation
from changefeed.source.mounter import JsonText
from changefeed.source.records import (
    BeginRecord,
    BinlogColumn,
    BinlogRecord,
    CommitRecord,
    DMLStatementRecord,
    HeartbeatRecord,
    QueryRecord,
    RotateRecord,
    RowsRecord,
    TableMap,
)
from changefeed.source.row_decoder import RowsDecoder
from changefeed.source.row_readers import time2_value
from changefeed.source.server import ConnectionSettings, translate_error
from changefeed.source.server_version import UNREADABLE_EVENTS
from changefeed.source.statement_dml import classify_dml

# The library silently reconnects on a lost connection and resumes from the last event it read, in
# GTID mode from the start of the current transaction, re-sending part of it with new ordinals. The
# capture reconnects instead, from the last transaction boundary, so a repeated row is always the same
# (commit_ts, ordinal) again. Emptying the list turns the library's retry off (it checks membership).
binlogstream.MYSQL_EXPECTED_ERROR_CODES.clear()


def _read_time2(self: Any, column: Any) -> datetime.timedelta:
    """TIME2 read right (row_readers.time2_value) where the library reads a value itself."""
    fsp = column.fsp or 0
    return time2_value(self.packet.read(3 + (fsp + 1) // 2), fsp)


# Name-mangled private method of the library's RowsEvent; replaced for every reader in this process.
RowsEvent._RowsEvent__read_time2 = _read_time2

_JSON_DATETIMES = {FIELD_TYPE.DATETIME, FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.TIMESTAMP2}
_JSON_DATES = {FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE}
_JSON_TIMES = {FIELD_TYPE.TIME, FIELD_TYPE.TIME2}


def _json_opaque(data: bytes) -> JsonText | None:
    """A custom-data scalar of MySQL binary JSON as the text MySQL prints for it.

    Layout (MySQL source, sql-common/json_binary.h): the column type byte (enum_field_types), the data
    length in 7-bit groups (high bit set: another byte follows), the data. DECIMAL data is precision,
    scale, then the binary decimal; a date, time or datetime is its 8-byte little-endian packed value
    (TIME_to_longlong_packed). MySQL prints a date/time as a string with six fractional digits and any
    other type as "base64:typeN:<base64 of the data>" (Json_wrapper::to_string). The library's own
    decoder drops a negative TIME's sign, fails on hours above 23, garbles TIMESTAMP and turns other
    types into lossy text.
    """
    if len(data) < 2:
        return None
    field_type = data[0]
    length, used = decode_variable_length(data[1:])
    body = data[1 + used:1 + used + length]
    if field_type in (FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DECIMAL):
        return JsonText(format(decode_decimal(body), "f"))
    if field_type in _JSON_DATETIMES | _JSON_DATES | _JSON_TIMES and len(body) >= 8:
        packed = int.from_bytes(body[:8], "little", signed=True)
        sign, packed = ("-", -packed) if packed < 0 else ("", packed)
        micros, whole = packed % (1 << 24), packed >> 24
        if field_type in _JSON_TIMES:
            return JsonText(f'"{sign}{_clock(whole, micros)}"')  # hours up to 838
        ymd = whole >> 17
        date = f"{(ymd >> 5) // 13:04d}-{(ymd >> 5) % 13:02d}-{ymd % 32:02d}"
        if field_type in _JSON_DATES:
            return JsonText(f'"{date}"')
        return JsonText(f'"{date} {_clock(whole % (1 << 17), micros)}"')
    return JsonText(f'"base64:type{field_type}:{base64.b64encode(body).decode()}"')


def _clock(hms: int, micros: int) -> str:
    """hours << 12 | minutes << 6 | seconds (the packed layout) as HH:MM:SS.ffffff."""
    return f"{(hms >> 12) % (1 << 10):02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}.{micros:06d}"


def _json_literal(data: bytes) -> Any:
    """JSON's null literal as text: the library's None would read as SQL NULL."""
    return JsonText("null") if data[0] == 0x00 else _library_literal(data)


def _read_binary_json(self: Any, size: int, is_partial: bool) -> Any:
    """A JSON column's value: length, then the document. An empty document is the JSON null literal
    (MySQL's json_binary::parse_binary; INSERT IGNORE or non-strict mode store it for a NULL into a
    NOT NULL column); the library returned None for it, which reads as SQL NULL."""
    if is_partial:
        return _library_read_binary_json(self, size, is_partial)  # refused in _records
    data = self.read(self.read_uint_by_size(size))
    if not data:
        return JsonText("null")
    return json_binary.parse_json(data[0], data[1:])


# The library's parse_json looks parse_opaque and parse_literal up in its module on every call.
json_binary.parse_opaque = _json_opaque
_library_literal = json_binary.parse_literal
json_binary.parse_literal = _json_literal
_library_read_binary_json = BinLogPacketWrapper.read_binary_json
BinLogPacketWrapper.read_binary_json = _read_binary_json

_ROW_KINDS = {
    WriteRowsEvent: RowKind.INSERT, UpdateRowsEvent: RowKind.UPDATE, DeleteRowsEvent: RowKind.DELETE,
}
# PartialUpdateRowsEvent and NotImplementedEvent are read only to be refused (`_unreadable`): the library
# would otherwise drop a partial JSON update, a Transaction_payload_event or a MariaDB compressed event
# without a word, and capture would move past the rows inside them.
_EVENTS = [RotateEvent, GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent, TableMapEvent, WriteRowsEvent,
           UpdateRowsEvent, DeleteRowsEvent, HeartbeatLogEvent, ExecuteLoadQueryEvent, PartialUpdateRowsEvent,
           NotImplementedEvent]


def _time_zone(event: Any) -> str:
    """The Query event's time_zone status variable (Q_TIME_ZONE_CODE), which MySQL and MariaDB write
    when the statement used the session's time zone: `-08:00`, a named zone, or `SYSTEM`."""
    zone = getattr(event, "time_zone", None)
    return zone.decode("ascii", errors="replace") if isinstance(zone, bytes) else str(zone or "")


def _load_query(event: Any) -> tuple[str, bytes]:
    """(query, default database) of an Execute_load_query event, which the library does not decode.

    Its body after the fixed part the library read is laid out as a Query event's: status variables,
    the database name, a NUL, then the LOAD DATA statement (MySQL source, Execute_load_query_log_event).
    """
    packet = event.packet
    packet.read(event.status_vars_length)
    schema = packet.read(event.schema_length)
    packet.advance(1)
    size = event.event_size - 26 - event.status_vars_length - event.schema_length - 1
    return packet.read(size).decode("utf-8", errors="backslashreplace"), schema


class GtidState:
    """The GTID position after the last event group seen, in the server's own notation."""

    def __init__(self, initial: str, is_mariadb: bool) -> None:
        self._is_mariadb = is_mariadb
        self._domains: dict[str, str] = {}
        self._mysql: Any = None
        if is_mariadb:
            for gtid in filter(None, (g.strip() for g in initial.split(","))):
                self._domains[gtid.split("-", 1)[0]] = gtid
        elif initial:
            self._mysql = GtidSet(initial)

    def add(self, gtid: str) -> None:
        if self._is_mariadb:
            self._domains[gtid.split("-", 1)[0]] = gtid
        else:
            added = GtidSet(gtid)
            self._mysql = added if self._mysql is None else self._mysql + added

    def __str__(self) -> str:
        if self._is_mariadb:
            return ",".join(self._domains[d] for d in sorted(self._domains, key=int))
        return "" if self._mysql is None else str(self._mysql)


def _primary_key_indexes(event: Any) -> set[int]:
    """The primary key's column indexes from the TABLE_MAP's optional metadata: SIMPLE_PRIMARY_KEY, or
    PRIMARY_KEY_WITH_PREFIX when a key column is indexed by a prefix (MySQL's Table_map_log_event
    documents both; the library marks only the first on its columns)."""
    metadata = getattr(event, "optional_metadata", None)
    if metadata is None:
        return set()
    return set(metadata.simple_primary_key_list or ()) | set(metadata.primary_keys_with_prefix or {})


def binlog_column(col: Any, nullable: bool, primary: bool) -> BinlogColumn:
    collation = getattr(col, "collation_name", None)
    return BinlogColumn(
        name=col.name,
        type_code=col.type,
        unsigned=bool(col.unsigned),
        nullable=nullable,
        primary=primary,
        charset=charset_of_collation(collation),
        collation=collation,
        max_length=getattr(col, "max_length", None),
        length_size=getattr(col, "length_size", None),
        precision=getattr(col, "precision", None),
        decimals=getattr(col, "decimals", None),
        fsp=getattr(col, "fsp", None),
        bits=getattr(col, "bits", None),
        elements=tuple(col.set_values or (col.enum_values or [])[1:]),
    )


class BinlogReader:
    """Iterate binlog records from `start` until `stop` is set (or the end, when not blocking)."""

    def __init__(self, settings: ConnectionSettings, start: Position, *, is_mariadb: bool, server_id: int,
                 use_gtid: bool = False, blocking: bool = True, heartbeat_s: float = 0.5,
                 stop: threading.Event | None = None) -> None:
        if use_gtid and not start.gtid:
            raise ConfigError(f"resume by GTID asked but position {start} has no GTID")
        self._settings = settings
        self._start = start
        self._is_mariadb = is_mariadb
        self._use_gtid = use_gtid
        self._stop = stop or threading.Event()
        self._gtids = GtidState(start.gtid, is_mariadb)
        kwargs: dict[str, Any] = {}
        if use_gtid:
            kwargs.update(auto_position=start.gtid, is_mariadb=is_mariadb)
        else:
            # MariaDB's own dump request ignores file/pos, so file/pos always goes the MySQL way.
            kwargs.update(log_file=start.file, log_pos=start.pos, resume_stream=True, is_mariadb=False)
        self._stream = BinLogStreamReader(
            connection_settings=settings.as_kwargs(), server_id=server_id, blocking=blocking,
            only_events=_EVENTS, filter_non_implemented_events=False, slave_heartbeat=heartbeat_s if blocking else None,
            enable_logging=False, **kwargs)
        self._file = start.file
        self._rows = RowsDecoder()

    def close(self) -> None:
        self._stream.close()

    def _position(self) -> Position:
        file = self._stream.log_file or self._file
        return Position(file, int(self._stream.log_pos or 0), str(self._gtids))

    def __iter__(self) -> Iterator[BinlogRecord]:
        try:
            yield from self._records()
        except Exception as exc:
            translated = translate_error(exc, f"reading the binlog after {self._position()}")
            if translated is None or translated is exc:
                raise
            raise translated from exc
        finally:
            self.close()

    def _records(self) -> Iterator[BinlogRecord]:
        stream = self._stream
        # Where the last event read ends: a heartbeat may move the position forward, never back.
        last_end = self._start
        while not self._stop.is_set():
            event = stream.fetchone()
            if event is None:
                return
            if isinstance(event, HeartbeatLogEvent):
                yield self._heartbeat(event, last_end)
                continue
            if isinstance(event, (NotImplementedEvent, PartialUpdateRowsEvent)):
                if event.event_type in UNREADABLE_EVENTS:
                    raise self._unreadable(event.event_type, last_end)
                continue
            last_end = self._position()
            kind = _ROW_KINDS.get(type(event))
            if kind is not None:
                rows = self._rows.rows(event)
                if rows is None:
                    rows = event.rows
                yield RowsRecord(kind, event.table_id, event.schema, event.table, rows, event.timestamp,
                                 self._position())
            elif isinstance(event, TableMapEvent):
                nulls = event.null_bitmask
                primary = _primary_key_indexes(event)
                columns = tuple(binlog_column(c, bool(nulls[i >> 3] & (1 << (i & 7))), i in primary)
                                for i, c in enumerate(event.columns))
                yield TableMap(event.table_id, event.schema, event.table, columns, self._position())
            elif isinstance(event, XidEvent):
                yield self._commit(event.timestamp)
            elif isinstance(event, (MariadbGtidEvent, GtidEvent)):
                self._gtids.add(event.gtid)
                yield BeginRecord(event.gtid, event.timestamp, self._position())
            elif isinstance(event, QueryEvent):
                yield from self._query(event.query, event.schema, event.timestamp, _time_zone(event))
            elif isinstance(event, ExecuteLoadQueryEvent):
                yield from self._query(*_load_query(event), event.timestamp, "")
            elif isinstance(event, RotateEvent):
                self._file = event.next_binlog
                last_end = Position(event.next_binlog, event.position, str(self._gtids))
                yield RotateRecord(last_end)

    def _unreadable(self, event_type: int, last_end: Position) -> ServerConfigError:
        name, setting = UNREADABLE_EVENTS[event_type]
        allowed = setting.allowed or "''"
        return ServerConfigError(
            f"a {name} (event type {event_type}) follows {last_end}, written because {setting.name} is not "
            f"{allowed} (globally or in the writing session): {setting.fix}, then recreate the changefeed with "
            "snapshot-mode 'initial' (the rows written that way stay unreadable in the binlog)")

    def _heartbeat(self, event: Any, last_end: Position) -> HeartbeatRecord:
        """The server's heartbeat: its binlog ends at (ident, log_pos) and everything before has been sent.

        Only a position in the file being read and not behind the last event read is taken: MySQL also
        sends heartbeats for events it skips (GTID auto-position), whose positions are not boundaries
        to resume from by file and offset."""
        file = str(event.ident).rstrip("\x00")
        pos = int(event.packet.log_pos or 0)
        now = time.time()
        if file != last_end.file or pos < last_end.pos:
            return HeartbeatRecord(None, now)
        return HeartbeatRecord(Position(file, pos, str(self._gtids)), now)

    def _query(self, query: str, schema: Any, timestamp: int, time_zone: str) -> Iterator[BinlogRecord]:
        sql = query.strip()
        upper = sql[:8].upper()
        if upper.startswith("BEGIN"):
            yield BeginRecord("", timestamp, self._position())
        elif upper.startswith("COMMIT"):
            yield self._commit(timestamp)
        else:
            database = schema.decode() if isinstance(schema, bytes) else str(schema)
            position = self._position()
            statement = classify_dml(sql, database)
            if statement is not None:
                yield DMLStatementRecord(sql, statement, position)
            else:
                yield QueryRecord(sql, database, timestamp, position, position, time_zone)

    def _commit(self, timestamp: int) -> CommitRecord:
        position = self._position()
        if self._use_gtid:
            # If the library reconnects on its own, it must resume after this transaction.
            self._stream.auto_position = position.gtid
        return CommitRecord(timestamp, position)
