"""Which server we talk to, decided once from `SELECT VERSION(), @@version_comment`, and the statements
that differ between versions.

The binlog status statement is the one that matters today:

- MySQL 8.2 deprecated `SHOW MASTER STATUS` in favour of `SHOW BINARY LOG STATUS`, and MySQL 8.4 LTS
  removed it (MySQL 8.4 Reference Manual, 15.7.7.1 "SHOW BINARY LOG STATUS Statement";
  "Features Removed in MySQL 8.4").
- MariaDB keeps `SHOW MASTER STATUS` (and since 10.5.2 also accepts `SHOW BINLOG STATUS`; MariaDB
  Knowledge Base "SHOW BINLOG STATUS"), so it gets the statement every version understands.

Both answer File, Position, Binlog_Do_DB, Binlog_Ignore_DB and, on MySQL, Executed_Gtid_Set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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
        if not self.is_mariadb and self.number >= (8, 2, 0):
            return "SHOW BINARY LOG STATUS"
        return "SHOW MASTER STATUS"


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
