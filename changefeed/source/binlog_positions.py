"""Is FILE:POS a place a changefeed can start from? Checked against the server before it is stored.

A start position must name a binlog the server still has (`SHOW BINARY LOGS`), lie within that file,
and be the first byte of an event: the dump protocol reads an event header at exactly that offset, so
any other offset fails only later, when the changefeed runs, with an error that looks like a purge.
`SHOW BINLOG EVENTS IN 'file' FROM pos LIMIT 1` decodes the event there and fails with error 1220
"Wrong offset or I/O error" when pos is not an event start (MySQL 8.4 Reference Manual, 15.7.7.2
"SHOW BINLOG EVENTS Statement"; MariaDB behaves the same), so the server itself is the judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from changefeed.errors import BinlogPurgedError, ConfigError
from changefeed.model import Position
from changefeed.source.server import ConnectionSettings, gtid_at, mysql_error_code, session
from changefeed.source.server_version import server_version

BINLOG_HEADER = 4  # every binlog starts with the 4-byte magic; the first event follows it
_SCAN_PAGE = 1000
_SCAN_PAGES = 100  # at most this many events x pages are read to name the nearest event starts


@dataclass(frozen=True)
class BinlogFile:
    name: str
    size: int


def binary_logs(cur: Any) -> list[BinlogFile]:
    """`SHOW BINARY LOGS`: Log_name, File_size (MySQL adds Encrypted), oldest first."""
    cur.execute("SHOW BINARY LOGS")
    return [BinlogFile(str(row[0]), int(row[1])) for row in cur.fetchall()]


def check_start_position(settings: ConnectionSettings, position: Position) -> Position:
    """The position, with its GTID state filled in where the server can tell (MariaDB), if a changefeed
    can start there; ConfigError naming what is valid, or BinlogPurgedError, otherwise."""
    with session(settings) as cur:  # driver errors come out as our errors (connection lost, ...)
        is_mariadb = server_version(cur).is_mariadb
        files = binary_logs(cur)
        _check_file_and_offset(cur, files, position)
        return Position(position.file, position.pos, gtid_at(cur, position.file, position.pos, is_mariadb))


def _check_file_and_offset(cur: Any, files: list[BinlogFile], position: Position) -> None:
    if not files:
        raise ConfigError("the server lists no binary logs (SHOW BINARY LOGS is empty): binary logging is off")
    by_name = {f.name: f for f in files}
    found = by_name.get(position.file)
    if found is None:
        oldest = Position(files[0].name, BINLOG_HEADER)
        same_series = position.file.rsplit(".", 1)[0] == files[0].name.rsplit(".", 1)[0]
        if same_series and position.file_index < oldest.file_index:
            raise BinlogPurgedError(
                f"binlog {position.file} was purged; the oldest binlog on the server is {files[0].name}. "
                "The changes before it are lost to capture: start at a kept binlog, or 'now' with "
                "snapshot-mode 'initial' to re-read the tables")
        raise ConfigError(f"binlog {position.file} does not exist; the server has {_listing(files)}")
    if position.pos < BINLOG_HEADER or position.pos > found.size:
        raise ConfigError(f"position {position.pos} is outside binlog {found.name}, which has events from "
                          f"{BINLOG_HEADER} to {found.size}; the server has {_listing(files)}")
    if position.pos == found.size:
        return  # the end of the file: nothing to decode, and the next event (or file) starts here
    try:
        cur.execute("SHOW BINLOG EVENTS IN %s FROM %s LIMIT 1", (found.name, position.pos))
        cur.fetchall()
    except Exception as exc:
        if mysql_error_code(exc) != 1220:  # ER_ERROR_WHEN_EXECUTING_COMMAND: a bad offset
            raise
        before, after = nearest_event_starts(cur, found, position.pos)
        nearest = " or ".join(f"{found.name}:{p}" for p in (before, after) if p is not None)
        raise ConfigError(f"position {position.file}:{position.pos} is not the start of an event (the server "
                          f"says: {exc.args[-1]}); the nearest event starts are {nearest} (see SHOW BINLOG "
                          f"EVENTS IN '{found.name}', column Pos)") from None


def nearest_event_starts(cur: Any, file: BinlogFile, pos: int) -> tuple[int | None, int | None]:
    """The event starts just before and just after `pos` in `file`, walking the events from the file
    start a page at a time (each page starts at a known event start); (None, None) past the scan limit."""
    before: int | None = None
    start = BINLOG_HEADER
    for _ in range(_SCAN_PAGES):
        cur.execute(f"SHOW BINLOG EVENTS IN %s FROM %s LIMIT {_SCAN_PAGE}", (file.name, start))
        rows = cur.fetchall()
        for row in rows:
            event_start, event_end = int(row[1]), int(row[4])
            if event_start > pos:
                return before, event_start
            before = event_start
            start = event_end
        if len(rows) < _SCAN_PAGE or start >= file.size:
            return before, file.size if file.size > pos else None
    return None, None


def _listing(files: list[BinlogFile]) -> str:
    shown = files if len(files) <= 6 else [*files[:2], None, *files[-3:]]
    return ", ".join("..." if f is None else f"{f.name} ({f.size} bytes)" for f in shown)
