"""Start by GTID set: the binlog position of the first transaction not in a set.

Debezium's MySQL connector keeps the GTIDs it has processed in its offset (`gtids`) and, when it
connects, asks for every transaction outside that set (Debezium MySQL connector docs, "GTIDs" and
"snapshot.mode=never"); a changefeed started with `gtid:<set>` likewise reads from the first
transaction outside the set. It is looked up once, at create or resume, and stored as a binlog
position (a transaction boundary), so everything after that is the same as for a FILE:POS start.

Refused before any scan: a set of the other server's form, a set with transactions the server never
wrote (ahead of `executed`), and a set that leaves out transactions the server no longer has (those
in `purged` but not in the set would be lost: BinlogPurgedError, as for a purged position).

Which file: each binlog opens with the GTIDs written before it (`binlog_start_gtids`), and these only
grow, so a binary search finds the last file opening within the set; that file is then read up to
the first GTID outside the set. A MySQL set with a gap starts at the gap: transactions after it that
are in the set are read again (at least once, never lost).
"""

from __future__ import annotations

import random

from changefeed.errors import BinlogPurgedError, ConfigError
from changefeed.model import Position
from changefeed.source.binlog_positions import BINLOG_HEADER, binary_logs, check_start_position
from changefeed.source.binlog_reader import BinlogReader
from changefeed.source.gtid_set import GtidSet, GtidSetError, MariadbGtids, MysqlGtids, parse_mariadb, parse_mysql
from changefeed.source.records import (
    BeginRecord,
    BinlogRecord,
    CommitRecord,
    DMLStatementRecord,
    QueryRecord,
    RotateRecord,
    RowsRecord,
    TableMap,
)
from changefeed.source.server import ConnectionSettings, session
from changefeed.source.server_version import (
    ServerVersion,
    binlog_start_gtids,
    binlog_status,
    gtid_bounds,
    server_version,
)
from changefeed.source.start_time import LOOKUP_SERVER_IDS

_GAP_EVENTS = 20  # more than the non-transaction events that open a binlog


def position_after_gtids(settings: ConnectionSettings, gtids: GtidSet) -> Position:
    """The position to start at so that the first transaction read is the first one not in `gtids`."""
    with session(settings) as cur:
        version = server_version(cur)
        if gtids.is_mariadb != version.is_mariadb:
            kind = "a MariaDB GTID position" if gtids.is_mariadb else "a MySQL GTID set"
            raise ConfigError(f"{gtids} is {kind}, but the server is {version.text}; give the set in its form "
                              f"({'uuid:1-100' if gtids.is_mariadb else 'domain-server-seq'})")
        files = binary_logs(cur)
        if not files:
            raise ConfigError("the server lists no binary logs (SHOW BINARY LOGS is empty): binary logging is off")
        bounds = gtid_bounds(cur, version, files[0].name)
        executed, purged = _parse(bounds.executed, version), _parse(bounds.purged, version)
        if not _within(gtids, executed):
            raise ConfigError(f"the set holds transactions the server has not written: its binlog has "
                              f"{executed or 'no GTIDs'} ({_executed_name(version)}); give a set within it")
        if not _within(purged, gtids):
            raise BinlogPurgedError(
                f"transactions after the set were purged: the server no longer has {purged} (its oldest binlog "
                f"is {files[0].name}); the changes between the set and those are lost to capture: give a set "
                "that contains them, or start 'now' with snapshot-mode 'initial' to copy the tables")
        status = binlog_status(cur, version)
        here = Position(status.file, status.pos) if status is not None else None
        low, high = 0, len(files) - 1  # invariant: file `low` opens within the set (or is the oldest)
        while low < high:
            middle = (low + high + 1) // 2
            if _within(_parse(binlog_start_gtids(cur, version, files[middle].name), version), gtids):
                low = middle
            else:
                high = middle - 1
    boundary = _first_outside(settings, Position(files[low].name, BINLOG_HEADER), gtids, version.is_mariadb)
    if boundary is None:
        # Every transaction the scan read is in the set, and it read at least up to `here` (taken
        # before it): start at the server's position then, not at the last event the reader surfaced.
        boundary = here or Position(files[-1].name, files[-1].size)
    return check_start_position(settings, boundary)  # also fills in the GTID state at the boundary


def _first_outside(settings: ConnectionSettings, start: Position, gtids: GtidSet, is_mariadb: bool
                   ) -> Position | None:
    """Read from `start` (an event boundary) to the first GTID event outside `gtids`, non-blocking; the
    position where that event starts, or None when the binlog ends first."""
    reader = BinlogReader(settings, start, is_mariadb=is_mariadb, server_id=random.randint(*LOOKUP_SERVER_IDS),
                          blocking=False)
    end = start  # where the last event surfaced ends: the GTID event starts there or a few events later
    try:
        for record in reader:
            if isinstance(record, BeginRecord) and record.gtid and not gtids.contains(record.gtid):
                return _event_start(settings, end, record.position)
            end = _end_of(record, end)
    finally:
        reader.close()
    return None


def _event_start(settings: ConnectionSettings, after: Position, event_end: Position) -> Position:
    """Where the event ending at `event_end` starts. The reader surfaces only some events (not Gtid_list,
    Previous_gtids, Binlog_checkpoint, ...), so the last end it surfaced can lie a few events before;
    SHOW BINLOG EVENTS walks from there (columns Pos and End_log_pos)."""
    if after.file == event_end.file:
        with session(settings) as cur:
            cur.execute(f"SHOW BINLOG EVENTS IN %s FROM %s LIMIT {_GAP_EVENTS}", (after.file, after.pos))
            for row in cur.fetchall():
                if int(row[4]) == event_end.pos:
                    return Position(after.file, int(row[1]))
    return Position(after.file, after.pos)  # a boundary all the same: only non-transaction events follow


def _end_of(record: BinlogRecord, before: Position) -> Position:
    if isinstance(record, (QueryRecord, CommitRecord, RotateRecord)):
        return record.next_position
    if isinstance(record, (BeginRecord, RowsRecord, TableMap, DMLStatementRecord)):
        return record.position
    return record.position or before  # a heartbeat: only in blocking reads


def _parse(text: str, version: ServerVersion) -> GtidSet | None:
    """The server's own GTID text; None when it is empty (no GTIDs yet, or none purged)."""
    if not text:
        return None
    try:
        return parse_mariadb(text) if version.is_mariadb else parse_mysql(text)
    except GtidSetError as exc:
        raise ConfigError(f"the server's GTIDs {text!r} could not be read: {exc}") from exc


def _within(part: GtidSet | None, whole: GtidSet | None) -> bool:
    """Is every transaction of `part` in `whole` (None: no transactions)?"""
    if part is None:
        return True
    if whole is None:
        return False
    if isinstance(part, MariadbGtids) and isinstance(whole, MariadbGtids):
        return part.issubset(whole)
    if isinstance(part, MysqlGtids) and isinstance(whole, MysqlGtids):
        return part.issubset(whole)
    return False  # the server's form was checked first: not reached


def _executed_name(version: ServerVersion) -> str:
    return "@@gtid_binlog_pos" if version.is_mariadb else "@@gtid_executed"
