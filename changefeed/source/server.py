"""SQL conversations with the source server (the only capture module importing PyMySQL):
settings and privilege checks, binlog status, information_schema reads, error translation."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pymysql

from changefeed.errors import (
    BinlogPurgedError,
    ChangefeedError,
    PrivilegeError,
    ServerConfigError,
    SourceConnectionError,
)
from changefeed.model import Position, TableName
from changefeed.source.column_types import InfoColumn
from changefeed.source.server_version import ServerVersion, binlog_status, server_version

_CONNECTION_LOST = {2003, 2006, 2013, 2055}
_BINLOG_PURGED = 1236  # ER_MASTER_FATAL_ERROR_READING_BINLOG


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    user: str
    password: str
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    # None: TLS if the server offers it (PyMySQL's default, ~0.1 s per connection to build the
    # context); False: plain TCP (loopback, tests); True: TLS required.
    tls: bool | None = None

    def as_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "host": self.host, "port": self.port, "user": self.user, "password": self.password,
            "connect_timeout": self.connect_timeout, "read_timeout": self.read_timeout, "charset": "utf8mb4"}
        if self.tls is False:
            kwargs["ssl_disabled"] = True
        elif self.tls is True:
            kwargs["ssl"] = {"check_hostname": False}
        return kwargs


def translate_error(exc: BaseException, where: str) -> ChangefeedError | None:
    """Map a driver error to our hierarchy; None when it is not a server/connection error."""
    if isinstance(exc, ChangefeedError):
        return exc
    if isinstance(exc, pymysql.err.MySQLError) and exc.args and isinstance(exc.args[0], int):
        code, message = exc.args[0], str(exc.args[1]) if len(exc.args) > 1 else ""
        if code == _BINLOG_PURGED:
            return BinlogPurgedError(
                f"{where}: the server no longer has the binlog to resume from ({message}). The data "
                "between the checkpoint and the oldest binlog is lost to capture: recreate the changefeed "
                "with snapshot mode 'initial' to re-read the tables, and keep binlogs longer "
                "(binlog_expire_logs_seconds / expire_logs_days) than the longest changefeed outage")
        if code in _CONNECTION_LOST or (isinstance(exc, pymysql.err.OperationalError) and code >= 2000):
            return SourceConnectionError(f"{where}: connection to the source lost ({code}: {message})")
        return None
    if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
        return SourceConnectionError(f"{where}: connection to the source lost ({exc!r})")
    return None


def mysql_error_code(exc: BaseException) -> int | None:
    """The server's error number of a driver error (e.g. 1220, 1412), None for anything else."""
    if isinstance(exc, pymysql.err.MySQLError) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


def connect(settings: ConnectionSettings, database: str | None = None,
            autocommit: bool = True) -> pymysql.Connection[Any]:
    try:
        return pymysql.connect(database=database, autocommit=autocommit, **settings.as_kwargs())
    except pymysql.err.MySQLError as exc:
        raise translate_error(exc, f"connecting to {settings.host}:{settings.port}") or exc from exc


@contextmanager
def session(settings: ConnectionSettings, database: str | None = None) -> Iterator[Any]:
    """A cursor on a fresh connection in UTC, so TIMESTAMP values read back as UTC, with the
    version's session setup (server_version.ServerVersion.session_sql)."""
    conn = connect(settings, database)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            for statement in server_version(cur).session_sql:
                cur.execute(statement)
            yield cur
    except pymysql.err.MySQLError as exc:
        raise translate_error(exc, "querying the source") or exc from exc
    finally:
        conn.close()


# --- server checks ---------------------------------------------------------------------------

REQUIRED_SETTINGS = (
    ("log_bin", "ON", "binary logging is off: start the server with --log-bin"),
    ("binlog_format", "ROW", "set binlog_format=ROW (SET GLOBAL binlog_format='ROW' and in my.cnf)"),
    ("binlog_row_image", "FULL",
     "set binlog_row_image=FULL so updates and deletes carry every column"),
    ("binlog_row_metadata", "FULL",
     "set binlog_row_metadata=FULL (MySQL >= 8.0.14, MariaDB >= 10.5) so row events carry column "
     "names, signedness and enum/set members"),
)


def check_settings(variables: Mapping[str, str], grants: Sequence[str], version: ServerVersion) -> None:
    """Raise ServerConfigError / PrivilegeError naming every missing setting or grant, and every
    setting this version has that capture cannot read (ServerVersion.refused_settings)."""
    is_mariadb = version.is_mariadb
    problems = []
    for name, wanted, fix in REQUIRED_SETTINGS:
        value = variables.get(name)
        if value is None:
            problems.append(f"{name} is not supported by this server version: {fix}")
        elif value.upper() != wanted:
            problems.append(f"{name}={value}: {fix}")
    for refused in version.refused_settings:
        value = variables.get(refused.name)
        problem = None if value is None else refused.problem(value)
        if problem:
            problems.append(problem)
    if problems:
        raise ServerConfigError("the source server is not ready for capture: " + "; ".join(problems))
    missing = missing_privileges(grants, is_mariadb)
    if missing:
        raise PrivilegeError(
            f"the capture user lacks {', '.join(missing)}: run GRANT {', '.join(missing)} ON *.* TO "
            "<user> (SELECT may be limited to the captured databases)")


def missing_privileges(grants: Sequence[str], is_mariadb: bool) -> list[str]:
    global_privs: set[str] = set()
    any_select = False
    for grant in grants:
        match = re.match(r"GRANT (.+?) ON (\S+) TO", grant, re.IGNORECASE)
        if not match:
            continue
        privs = {p.strip().upper() for p in match.group(1).split(",")}
        if match.group(2) == "*.*":
            global_privs |= privs
        if "ALL PRIVILEGES" in privs or "SELECT" in privs:
            any_select = True
    if "ALL PRIVILEGES" in global_privs:
        return []
    missing = []
    if not global_privs & {"REPLICATION SLAVE", "REPLICATION REPLICA"}:
        missing.append("REPLICATION SLAVE")
    if not global_privs & {"REPLICATION CLIENT", "BINLOG MONITOR", "SUPER"}:
        missing.append("BINLOG MONITOR" if is_mariadb else "REPLICATION CLIENT")
    if not any_select:
        missing.append("SELECT")
    return missing


def check_server(settings: ConnectionSettings) -> bool:
    """Check settings and grants; returns True for MariaDB."""
    with session(settings) as cur:
        version = server_version(cur)
        names = [name for name, _, _ in REQUIRED_SETTINGS] + [s.name for s in version.refused_settings]
        cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({', '.join(['%s'] * len(names))})", names)
        variables = {str(k).lower(): str(v) for k, v in cur.fetchall()}
        cur.execute("SHOW GRANTS FOR CURRENT_USER()")
        grants = [str(row[0]) for row in cur.fetchall()]
    check_settings(variables, grants, version)
    return version.is_mariadb


def current_position(cur: Any, is_mariadb: bool) -> Position:
    status = binlog_status(cur)
    if status is None:
        raise ServerConfigError("the binlog status (SHOW MASTER STATUS / SHOW BINARY LOG STATUS) is empty: "
                                "binary logging is off; start with --log-bin")
    gtid = gtid_at(cur, status.file, status.pos, True) if is_mariadb else status.executed_gtid_set
    return Position(status.file, status.pos, gtid)


def gtid_at(cur: Any, file: str, pos: int, is_mariadb: bool) -> str:
    """MariaDB's GTID state at a binlog position (BINLOG_GTID_POS); "" on MySQL, which has no such
    lookup (its GTID set comes from the binlog status)."""
    if is_mariadb:
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
        found = cur.fetchone()
        return str(found[0] or "") if found else ""
    return ""


def binlog_files(settings: ConnectionSettings) -> list[str]:
    with session(settings) as cur:
        cur.execute("SHOW BINARY LOGS")
        return [str(row[0]) for row in cur.fetchall()]


# --- information_schema ----------------------------------------------------------------------

@dataclass(frozen=True)
class TableInfo:
    name: TableName
    columns: tuple[InfoColumn, ...]
    primary_key: tuple[str, ...]
    unique_keys: tuple[tuple[str, ...], ...]


_CONSISTENT_READ_ATTEMPTS = 5


def fetch_table_info(cur: Any, table: TableName) -> TableInfo | None:
    """The table as information_schema describes it now, or None if it does not exist (or keeps changing).

    Columns, JSON checks and keys are three queries, and DDL may commit between them: seen in the
    equality long run, a table dropped right after its CREATE was read with its columns but without
    its primary key. The columns are read again after the keys; the answer is used only when both
    reads agree (a table dropped in between reads as gone, so the binlog's TABLE_MAP decides)."""
    for _ in range(_CONSISTENT_READ_ATTEMPTS):
        rows = _column_rows(cur, table)
        if not rows:
            return None
        json_columns = json_check_columns(cur, table)
        primary, unique = _unique_keys(cur, table)
        if _column_rows(cur, table) == rows:
            return TableInfo(table, tuple(_info_column(row, json_columns) for row in rows), primary, unique)
    return None


def _column_rows(cur: Any, table: TableName) -> list[tuple[Any, ...]]:
    cur.execute(
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLLATION_NAME, "
        "CHARACTER_MAXIMUM_LENGTH, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s "
        "ORDER BY ORDINAL_POSITION", (table.schema, table.table))
    return [tuple(row) for row in cur.fetchall()]


def _info_column(row: tuple[Any, ...], json_columns: set[str]) -> InfoColumn:
    name, data_type, column_type, nullable, charset, collation, length, extra = row
    is_binary = str(data_type).lower() in ("binary", "varbinary") or str(data_type).endswith("blob")
    return InfoColumn(
        name=str(name), data_type=str(data_type).lower(), column_type=str(column_type),
        nullable=nullable == "YES", charset="binary" if is_binary else charset,
        collation="binary" if is_binary else collation,
        char_length=int(length) if length is not None else None,
        is_json=str(name) in json_columns and str(data_type).lower() == "longtext",
        virtual="VIRTUAL" in str(extra or "").upper())


def _unique_keys(cur: Any, table: TableName) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(primary key, other unique keys), each key's columns in index order."""
    cur.execute(
        "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA=%s "
        "AND TABLE_NAME=%s AND NON_UNIQUE=0 ORDER BY INDEX_NAME='PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
        (table.schema, table.table))
    indexes: dict[str, list[str]] = {}
    for index, column in cur.fetchall():
        indexes.setdefault(str(index), []).append(str(column))
    primary = tuple(indexes.pop("PRIMARY", ()))
    return primary, tuple(tuple(v) for v in indexes.values())


def json_check_columns(cur: Any, table: TableName) -> set[str]:
    """MariaDB stores JSON as LONGTEXT guarded by CHECK (json_valid(`col`))."""
    try:
        cur.execute("SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
                    "WHERE CONSTRAINT_SCHEMA=%s AND TABLE_NAME=%s", (table.schema, table.table))
    except pymysql.err.MySQLError:
        return set()
    names = set()
    for (clause,) in cur.fetchall():
        match = re.fullmatch(r"\s*json_valid\(`((?:[^`]|``)+)`\)\s*", str(clause), re.IGNORECASE)
        if match:
            names.add(match.group(1).replace("``", "`"))
    return names


def list_tables(cur: Any) -> list[TableName]:
    cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                "WHERE TABLE_TYPE='BASE TABLE' "
                "AND TABLE_SCHEMA NOT IN ('mysql','information_schema','performance_schema','sys') "
                "ORDER BY TABLE_SCHEMA, TABLE_NAME")
    return [TableName(str(s), str(t)) for s, t in cur.fetchall()]
