"""Start by time: the binlog position of the first transaction at or after a moment.

Binlog events carry the second their statement started (MySQL 8.4 Reference Manual, 17.1.x "binlog
event header": timestamp), and the events of a server's binlog are in commit order, so their times
rise but not strictly (a long transaction started earlier commits later). The position found is a
transaction boundary: the end of the last transaction that began before the moment, so nothing that
began at or after it is skipped (TiCDC's `--start-ts` likewise starts at a commit timestamp).

Which file: `SHOW BINLOG EVENTS` has no times, so each probe reads the first transaction of a file
through the replication protocol; a binary search over the files needs about log2(files) probes,
then one file is read up to the moment.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass

from changefeed.ddl_parse import parse_ddl
from changefeed.errors import BinlogPurgedError, ConfigError, DDLParseError
from changefeed.model import Position
from changefeed.source.binlog_positions import BINLOG_HEADER, binary_logs
from changefeed.source.binlog_reader import BinlogReader
from changefeed.source.records import BeginRecord, CommitRecord, QueryRecord, RotateRecord
from changefeed.source.server import ConnectionSettings, session
from changefeed.source.server_version import server_version

# Dump connections with the same server id replace each other: the look-up uses ids far from those of
# running changefeeds (1e6 .. 1e9+1e6, changefeed/lifecycle/runner.py).
_LOOKUP_SERVER_IDS = (3_000_000_000, 4_000_000_000)


@dataclass(frozen=True)
class _Found:
    boundary: Position  # where to start to read the transaction found
    timestamp: int | None  # its time; None: the binlog ended first


def position_at_time(settings: ConnectionSettings, unix_seconds: int) -> Position:
    """The position to start at so that every transaction that began at or after `unix_seconds` is read."""
    with session(settings) as cur:
        is_mariadb = server_version(cur).is_mariadb
        files = binary_logs(cur)
    if not files:
        raise ConfigError("the server lists no binary logs (SHOW BINARY LOGS is empty): binary logging is off")
    first = _first_at_or_after(settings, Position(files[0].name, BINLOG_HEADER), 0, is_mariadb)
    if first.timestamp is not None and first.timestamp > unix_seconds:
        raise BinlogPurgedError(
            f"the oldest binlog on the server ({files[0].name}) starts after that time, with a transaction at "
            f"{_utc(first.timestamp)}: changes before then are no longer there; give a later time, or start "
            "'now' with snapshot-mode 'initial' to copy the tables")
    low, high = 0, len(files) - 1  # invariant: the file at `low` starts at or before the moment
    while low < high:
        middle = (low + high + 1) // 2
        probe = _first_at_or_after(settings, Position(files[middle].name, BINLOG_HEADER), 0, is_mariadb)
        if probe.timestamp is not None and probe.timestamp <= unix_seconds:
            low = middle
        else:
            high = middle - 1
    found = _first_at_or_after(settings, Position(files[low].name, BINLOG_HEADER), unix_seconds, is_mariadb)
    return found.boundary


def _first_at_or_after(settings: ConnectionSettings, start: Position, unix_seconds: int,
                       is_mariadb: bool) -> _Found:
    """Read from `start` (an event boundary) to the first transaction or DDL beginning at or after
    `unix_seconds`, non-blocking; the boundary before it, or the end of the binlog."""
    reader = BinlogReader(settings, start, is_mariadb=is_mariadb, server_id=random.randint(*_LOOKUP_SERVER_IDS),
                          blocking=False)
    boundary, in_group = start, False
    try:
        for record in reader:
            if isinstance(record, BeginRecord) or (isinstance(record, QueryRecord) and not in_group):
                if record.timestamp >= unix_seconds:
                    return _Found(boundary, record.timestamp)
                in_group = True
            if isinstance(record, CommitRecord):
                boundary, in_group = record.next_position, False
            elif isinstance(record, QueryRecord) and _is_ddl(record.sql, record.database):
                boundary, in_group = record.next_position, False  # DDL commits implicitly
            elif isinstance(record, RotateRecord):
                boundary = record.next_position
    finally:
        reader.close()
    return _Found(boundary, None)


def _is_ddl(sql: str, database: str) -> bool:
    try:
        return parse_ddl(sql, database) is not None
    except DDLParseError:
        return True  # DDL whose tables cannot be told still commits implicitly: a boundary all the same


def _utc(unix_seconds: int) -> str:
    return datetime.datetime.fromtimestamp(unix_seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
