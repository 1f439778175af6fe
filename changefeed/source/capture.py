"""CaptureSource: the public face of capture, an iterator of RowChange / DDLEvent / TransactionCommit.

    source = CaptureSource(settings, CaptureOptions(...), start=checkpoint_or_None, stop=event)
    for event in source.events():
        ...                      # RowChange, DDLEvent, or TransactionCommit(checkpoint)

Rows stream as they are decoded (a large transaction is never held in memory); a TransactionCommit
follows each transaction and DDL, and acknowledging its checkpoint is what makes resuming safe.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from changefeed.ddl_parse import ParsedDDL, parse_ddl
from changefeed.errors import ConfigError, SnapshotRetryError, SourceConnectionError
from changefeed.filter import ChangeFilter
from changefeed.model import (
    CaptureEvent,
    Checkpoint,
    DDLEvent,
    DDLKind,
    Position,
    TableName,
    TransactionCommit,
    compose_tso,
    tso_physical_ms,
)
from changefeed.source.binlog_reader import BinlogReader
from changefeed.source.ddl import ddl_events
from changefeed.source.records import (
    BeginRecord,
    CommitRecord,
    DMLStatementRecord,
    HeartbeatRecord,
    QueryRecord,
    RotateRecord,
    RowsRecord,
    TableMap,
)
from changefeed.source.schema_store import SchemaStore
from changefeed.source.schema_tracker import SchemaTracker
from changefeed.source.server import (
    ConnectionSettings,
    TableInfo,
    check_server,
    current_position,
    fetch_table_info,
    session,
    translate_error,
)
from changefeed.source.snapshot import ProgressCallback, snapshot
from changefeed.source.statement_dml import refuse_statement_dml

log = logging.getLogger(__name__)
SNAPSHOT_MODES = ("initial", "never", "initial_only")
RESOLVED_MARGIN_S = 2.0
# The position of a stored checkpoint that has none yet: a changefeed created 'now' with snapshot mode
# 'initial' or 'initial_only' keeps it until its snapshot is acknowledged, so a restart or a takeover
# before then takes the snapshot again instead of streaming from a position that skips the old rows.
NO_POSITION = Position("", 0)


def awaits_snapshot(checkpoint: Checkpoint | None) -> bool:
    """No binlog position yet: start as a new changefeed does (snapshot, or the current position)."""
    return checkpoint is None or not checkpoint.position.file


class CommitClock:
    """Commit timestamps in TSO form from binlog seconds: strictly increasing even when the server
    clock stands still or steps back (the logical part counts within one millisecond)."""

    def __init__(self, last: int = 0) -> None:
        self.last = last

    def next(self, unix_seconds: int) -> int:
        physical = unix_seconds * 1000
        ts = compose_tso(physical, 0) if physical > tso_physical_ms(self.last) else self.last + 1
        self.last = ts
        return ts

    def resolved(self, now: float) -> int:
        """Timestamp of a heartbeat checkpoint (no transaction) at `now` on this host's clock.

        It stays RESOLVED_MARGIN_S behind `now` and never passes a commit's logical count, so the
        commits that follow get the timestamps they would get without the heartbeat (a replay from
        an older checkpoint sees no heartbeats, and must give a re-sent row its old timestamp), as
        long as the source's clock is less than a second behind this host's."""
        self.last = max(self.last, compose_tso(int((now - RESOLVED_MARGIN_S) * 1000), 0))
        return self.last


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 0.2
    max_s: float = 10.0
    max_attempts: int = 20  # consecutive failures before giving up (the error is re-raised)

    def delay(self, attempt: int) -> float:
        base = min(self.max_s, self.initial_s * (2 ** attempt))
        return float(base * random.uniform(0.5, 1.0))


@dataclass(frozen=True)
class CaptureOptions:
    server_id: int = 5400
    snapshot_mode: str = "initial"
    change_filter: ChangeFilter = field(default_factory=ChangeFilter)
    schema_store_url: str = "sqlite://"
    changefeed_id: str = "default"
    use_gtid: bool = False
    blocking: bool = True  # False: stop at the end of the binlog (tests, benchmarks, catch-up jobs)
    snapshot_chunk_size: int = 5000
    backoff: Backoff = field(default_factory=Backoff)

    def __post_init__(self) -> None:
        if self.snapshot_mode not in SNAPSHOT_MODES:
            raise ConfigError(
                f"snapshot mode {self.snapshot_mode!r} is not one of {', '.join(SNAPSHOT_MODES)}")


class CaptureSource:
    def __init__(self, settings: ConnectionSettings, options: CaptureOptions | None = None, *,
                 start: Checkpoint | None = None, stop: threading.Event | None = None,
                 on_progress: ProgressCallback | None = None) -> None:
        self.settings = settings
        self.options = options or CaptureOptions()
        self.start = start
        self.stop = stop or threading.Event()
        self.on_progress = on_progress
        self._store = SchemaStore(self.options.schema_store_url, self.options.changefeed_id)
        self._tracker = SchemaTracker(self._store, self._lookup)
        self.reconnects = 0
        self._info_session: AbstractContextManager[Any] | None = None
        self._info_cursor: Any = None

    def _lookup(self, table: TableName) -> TableInfo | None:
        if self._info_session is None:
            self._info_session = session(self.settings)
            self._info_cursor = self._info_session.__enter__()
        try:
            return fetch_table_info(self._info_cursor, table)
        except Exception as exc:
            self._close_info_session()
            translated = translate_error(exc, f"reading information_schema for {table}")
            if translated is None or translated is exc:
                raise
            raise translated from exc

    def _close_info_session(self) -> None:
        if self._info_session is not None:
            self._info_session.__exit__(None, None, None)
            self._info_session = None

    def close(self) -> None:
        self._close_info_session()
        self._store.close()

    def events(self) -> Iterator[CaptureEvent]:
        is_mariadb = check_server(self.settings)
        checkpoint = self.start
        if awaits_snapshot(checkpoint):
            checkpoint = None
            if self.options.snapshot_mode == "never":
                with session(self.settings) as cur:
                    checkpoint = Checkpoint(current_position(cur, is_mariadb), 0)
            else:
                checkpoint = yield from self._snapshot(is_mariadb)
                if self.options.snapshot_mode == "initial_only":
                    return
        elif self.options.snapshot_mode == "initial_only":
            return  # the snapshot was taken and acknowledged by an earlier run: nothing is left to read
        assert checkpoint is not None
        yield from self._stream_with_reconnect(checkpoint, is_mariadb)

    def _snapshot(self, is_mariadb: bool) -> Generator[CaptureEvent, None, Checkpoint]:
        """The snapshot's rows, then its commit; returns its checkpoint. A table created or changed
        under the snapshot makes it start over (the rows sent already are sent again: at least once)."""
        clock = CommitClock()
        attempt = 0
        while True:
            try:
                checkpoint = None
                for item in snapshot(self.settings, self._tracker, self.options.change_filter,
                                     is_mariadb=is_mariadb, commit_ts=clock.next,
                                     chunk_size=self.options.snapshot_chunk_size,
                                     on_progress=self.on_progress):
                    if isinstance(item, TransactionCommit):
                        checkpoint = item.checkpoint
                    yield item
                assert checkpoint is not None  # snapshot() always ends with its commit
                return checkpoint
            except SnapshotRetryError as exc:
                if attempt >= self.options.backoff.max_attempts or self.stop.is_set():
                    raise
                attempt += 1
                log.warning("%s; taking the snapshot again (attempt %d)", exc, attempt)

    def _stream_with_reconnect(self, checkpoint: Checkpoint, is_mariadb: bool) -> Iterator[CaptureEvent]:
        attempt = 0
        while not self.stop.is_set():
            try:
                for event in self._stream(checkpoint, is_mariadb):
                    if isinstance(event, TransactionCommit):
                        checkpoint = event.checkpoint
                        attempt = 0
                    yield event
                return
            except SourceConnectionError as exc:
                if attempt >= self.options.backoff.max_attempts:
                    raise
                delay = self.options.backoff.delay(attempt)
                attempt += 1
                self.reconnects += 1
                log.warning("%s; reconnecting from %s in %.1fs (attempt %d)", exc, checkpoint.position, delay,
                            attempt)
                if self.stop.wait(delay):
                    return

    def _stream(self, checkpoint: Checkpoint, is_mariadb: bool) -> Iterator[CaptureEvent]:
        options = self.options
        keep = options.change_filter
        tracker = self._tracker
        tracker.forget_table_ids()
        clock = CommitClock(checkpoint.commit_ts)
        reader = BinlogReader(self.settings, checkpoint.position, is_mariadb=is_mariadb,
                              server_id=options.server_id, use_gtid=options.use_gtid,
                              blocking=options.blocking, stop=self.stop)
        tables: dict[int, TableMap] = {}
        commit_ts = 0
        in_group = False
        ordinal = 0
        for record in reader:
            if isinstance(record, RowsRecord):
                table_map = tables.get(record.table_id)
                if table_map is None:
                    continue  # filtered table
                if not in_group:
                    commit_ts, in_group, ordinal = clock.next(record.timestamp), True, 0
                mounter = tracker.mounter(table_map)
                kind = record.kind
                for raw in record.rows:
                    change = mounter.mount(kind, raw, commit_ts, record.position, ordinal)
                    ordinal += 1
                    if keep.events and not keep.keeps_row(change):
                        continue
                    yield change
            elif isinstance(record, TableMap):
                if keep.keeps_table(TableName(record.schema, record.table)):
                    tables[record.table_id] = record
                else:
                    tables.pop(record.table_id, None)
            elif isinstance(record, BeginRecord):
                if not in_group:
                    commit_ts, in_group, ordinal = clock.next(record.timestamp), True, 0
            elif isinstance(record, CommitRecord):
                if not in_group:
                    commit_ts = clock.next(record.timestamp)
                in_group = False
                yield TransactionCommit(Checkpoint(record.next_position, commit_ts), ordinal)
            elif isinstance(record, QueryRecord):
                parsed = parse_ddl(record.sql, record.database)
                if parsed is None:
                    continue  # e.g. SAVEPOINT inside a transaction: not a boundary
                if not in_group:
                    commit_ts = clock.next(record.timestamp)
                in_group = False  # DDL commits implicitly
                yield from self._ddl(record, parsed, commit_ts)
                yield TransactionCommit(Checkpoint(record.next_position, commit_ts), 0)
            elif isinstance(record, RotateRecord):
                tables.clear()
                tracker.forget_table_ids()
            elif isinstance(record, DMLStatementRecord):
                refuse_statement_dml(record.statement, record.sql, record.position, keep.keeps_table)
            elif isinstance(record, HeartbeatRecord) and record.position is not None and not in_group:
                # An idle source: the checkpoint (and its lag) follows the server's binlog end, as
                # TiCDC's resolved ts does; delivery still moves it only once all before is acknowledged.
                yield TransactionCommit(Checkpoint(record.position, clock.resolved(record.timestamp)), 0)

    def _ddl(self, record: QueryRecord, parsed: ParsedDDL, commit_ts: int) -> Iterator[DDLEvent]:
        keeps = self.options.change_filter.keeps_table
        if parsed.kind is DDLKind.DROP_DATABASE or any(keeps(t) for t in parsed.tables):
            schemas = self._tracker.apply_ddl(parsed, record.position)
        else:
            schemas = ()
        for event in ddl_events(record.sql, parsed, record.database, commit_ts, record.position, schemas):
            if self.options.change_filter.keeps_ddl(event):
                yield replace(event, time_zone=record.time_zone) if record.time_zone else event


def start_position(settings: ConnectionSettings) -> Position:
    """The server's current binlog position (to start a changefeed 'from now')."""
    is_mariadb = check_server(settings)
    with session(settings) as cur:
        return current_position(cur, is_mariadb)
