"""Which server we talk to, decided once from `SELECT VERSION(), @@version_comment`, and everything
that differs between versions: statements, settings checked at create/start, and session setup.
Version-specific behaviour lives here and nowhere else.

The binlog status statement:

- MySQL 8.2 deprecated `SHOW MASTER STATUS` in favour of `SHOW BINARY LOG STATUS`, and MySQL 8.4 LTS
  removed it (MySQL 8.4 Reference Manual, 15.7.7.1 "SHOW BINARY LOG STATUS Statement";
  "Features Removed in MySQL 8.4").
- MariaDB keeps `SHOW MASTER STATUS` (and since 10.5.2 also accepts `SHOW BINLOG STATUS`; MariaDB
  Knowledge Base "SHOW BINLOG STATUS"), so it gets the statement every version understands.

Both answer File, Position, Binlog_Do_DB, Binlog_Ignore_DB and, on MySQL, Executed_Gtid_Set.

Settings that would make row events unreadable to python-mysql-replication 1.0.17 (it decodes neither
compressed events nor partial JSON after-images, and would drop them without a word), so create/start
refuse them (`ServerVersion.refused_settings`):

- MySQL >= 8.0.20 `binlog_transaction_compression=ON` wraps each transaction in one zstd-compressed
  Transaction_payload_event (MySQL 8.0 Reference Manual, "Binary Log Transaction Compression").
- MySQL >= 8.0.3 `binlog_row_value_options=PARTIAL_JSON` logs only the changed parts of a JSON document
  in an update's after-image, even with binlog_row_image=FULL (manual, "binlog_row_value_options").
- MariaDB >= 10.2.3 `log_bin_compress=ON` writes *_COMPRESSED_EVENTs (MariaDB Knowledge Base,
  "Compressing Events to Reduce Size of the Binary Log").

Session setup (`ServerVersion.session_sql`): MySQL >= 8.0.30 may hide a generated invisible primary key
(`my_row_id`) from information_schema when `show_gipk_in_create_table_and_information_schema=OFF`; the
binlog's row images carry it all the same, so every session that reads table definitions shows it
(manual, 15.1.20.11 "Generated Invisible Primary Keys").

GTID bounds, for a start by GTID set (`gtid_bounds`, `binlog_start_gtids`):

- MySQL: `@@gtid_executed` (every transaction the server committed) and `@@gtid_purged` (those whose
  binlogs are gone), meaningful only with `gtid_mode=ON` (MySQL 8.4 Reference Manual, 19.1.6.5 "Global
  Transaction ID System Variables"); each binlog opens with a Previous_gtids event holding the set
  written before it.
- MariaDB: GTIDs are always on; `@@gtid_binlog_pos` is the last GTID per domain in the binlog, and
  each binlog opens with a Gtid_list event (shown as `[0-1-6,...]`) holding the position before it, so
  the oldest binlog's list marks what was purged (MariaDB Knowledge Base, "Global Transaction ID",
  "gtid_binlog_pos"; "Gtid_list_log_event").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from changefeed.errors import ServerConfigError

_NUMBERS = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")
# Some proxies and old clients see MariaDB as "5.5.5-10.11.6-MariaDB": the 5.5.5- prefix is the
# replication-protocol compatibility hack, not the version.
_MARIADB_PREFIX = "5.5.5-"


@dataclass(frozen=True)
class ServerVersion:
    number: tuple[int, int, int]
    is_mariadb: bool
    text: str  # VERSION() as the server said it, for messages

    @property
    def binlog_status_sql(self) -> str:
        if self.is_mysql((8, 2, 0)):
            return "SHOW BINARY LOG STATUS"
        return "SHOW MASTER STATUS"

    def is_mysql(self, at_least: tuple[int, int, int]) -> bool:
        return not self.is_mariadb and self.number >= at_least

    @property
    def refused_settings(self) -> tuple[RefusedSetting, ...]:
        """Global variables this version has that must not be ON for capture, with their fix."""
        if self.is_mariadb:
            return (_LOG_BIN_COMPRESS,) if self.number >= (10, 2, 3) else ()
        return tuple(s for since, s in _MYSQL_REFUSED if self.number >= since)

    @property
    def session_sql(self) -> tuple[str, ...]:
        """Statements every SQL session with this server runs first (after `SET time_zone`)."""
        if self.is_mysql((8, 0, 30)):
            return ("SET SESSION show_gipk_in_create_table_and_information_schema = ON",)
        return ()


@dataclass(frozen=True)
class RefusedSetting:
    """A global variable whose value must be `allowed` (compared case-insensitively)."""

    name: str
    allowed: str
    fix: str

    def problem(self, value: str) -> str | None:
        if value.upper() == self.allowed.upper():
            return None
        shown = value or "''"
        return f"{self.name}={shown}: {self.fix}"


_MYSQL_REFUSED = (
    ((8, 0, 3), RefusedSetting(
        "binlog_row_value_options", "",
        "partial JSON updates leave the rest of the document out of the binlog; run "
        "SET GLOBAL binlog_row_value_options='' (and binlog_row_value_options='' in my.cnf)")),
    ((8, 0, 20), RefusedSetting(
        "binlog_transaction_compression", "OFF",
        "compressed transaction payloads (Transaction_payload_event) cannot be read; run "
        "SET GLOBAL binlog_transaction_compression=OFF (and binlog_transaction_compression=OFF in my.cnf)")),
)
_LOG_BIN_COMPRESS = RefusedSetting(
    "log_bin_compress", "OFF",
    "compressed binlog events cannot be read; run SET GLOBAL log_bin_compress=OFF (and log_bin_compress=OFF "
    "in my.cnf)")

# Binlog event types written only under a refused setting (set at session level, or after the changefeed
# started): meeting one stops capture rather than skipping the rows inside it. Type codes: MySQL's
# Log_event_type (TRANSACTION_PAYLOAD_EVENT = 40, PARTIAL_UPDATE_ROWS_EVENT = 39) and MariaDB's
# (QUERY_COMPRESSED_EVENT = 165 ... DELETE_ROWS_COMPRESSED_EVENT = 171).
UNREADABLE_EVENTS: dict[int, tuple[str, RefusedSetting]] = {
    39: ("Partial_update_rows_event", _MYSQL_REFUSED[0][1]),
    40: ("Transaction_payload_event", _MYSQL_REFUSED[1][1]),
    **{code: ("compressed event", _LOG_BIN_COMPRESS) for code in range(165, 172)},
}


@dataclass(frozen=True)
class BinlogStatus:
    file: str
    pos: int
    executed_gtid_set: str  # MySQL's Executed_Gtid_Set, newlines removed; "" on MariaDB


def parse_server_version(version: str, comment: str = "") -> ServerVersion:
    """`VERSION()` and `@@version_comment` -> ServerVersion. MariaDB says so in one of the two
    (e.g. '10.11.6-MariaDB-log' / 'mariadb.org binary distribution'; Debian builds put the distro in
    the comment and keep MariaDB in the version)."""
    is_mariadb = "mariadb" in version.lower() or "mariadb" in comment.lower()
    text = version[len(_MARIADB_PREFIX):] if is_mariadb and version.startswith(_MARIADB_PREFIX) else version
    match = _NUMBERS.match(text.strip())
    if match is None:
        raise ValueError(f"server version {version!r} does not start with MAJOR.MINOR")
    major, minor, patch = match.groups()
    return ServerVersion((int(major), int(minor), int(patch or 0)), is_mariadb, version)


def server_version(cur: Any) -> ServerVersion:
    cur.execute("SELECT VERSION(), @@version_comment")
    version, comment = cur.fetchone()
    return parse_server_version(str(version), str(comment or ""))


def binlog_status(cur: Any, version: ServerVersion | None = None) -> BinlogStatus | None:
    """The server's current binlog file and position; None when binary logging is off."""
    cur.execute((version or server_version(cur)).binlog_status_sql)
    row = cur.fetchone()
    if row is None:
        return None
    gtid = str(row[4] or "").replace("\n", "") if len(row) > 4 else ""
    return BinlogStatus(str(row[0]), int(row[1]), gtid)


@dataclass(frozen=True)
class GtidBounds:
    """The GTIDs a server's binlog has written (`executed`) and those no longer in it (`purged`), in the
    server's own notation."""

    executed: str
    purged: str


def binlog_start_gtids(cur: Any, version: ServerVersion, file: str) -> str:
    """The GTIDs written before binlog `file`: its Gtid_list (MariaDB) or Previous_gtids (MySQL) event,
    one of the first events of every binlog; "" when the file has none."""
    wanted = "Gtid_list" if version.is_mariadb else "Previous_gtids"
    cur.execute("SHOW BINLOG EVENTS IN %s LIMIT 4", (file,))
    for row in cur.fetchall():
        if str(row[2]) == wanted:
            return "".join(str(row[5] or "").strip("[]").split())
    return ""


def gtid_bounds(cur: Any, version: ServerVersion, oldest_file: str) -> GtidBounds:
    """Executed and purged GTIDs; ServerConfigError when the server gives transactions no GTIDs."""
    if version.is_mariadb:
        cur.execute("SELECT @@gtid_binlog_pos")
        executed = str(cur.fetchone()[0] or "")
        return GtidBounds(executed, binlog_start_gtids(cur, version, oldest_file))
    cur.execute("SELECT @@gtid_mode, @@gtid_executed, @@gtid_purged")
    mode, executed, purged = cur.fetchone()
    if str(mode).upper() != "ON":
        raise ServerConfigError(f"gtid_mode is {mode} on this server, so its transactions have no GTIDs to "
                                "start from; start by binlog position FILE:POS or by time instead (or set "
                                "gtid_mode=ON, MySQL manual 19.1.4 \"Changing GTID Mode on Online Servers\")")
    return GtidBounds("".join(str(executed or "").split()), "".join(str(purged or "").split()))
