"""Version detection decides the binlog status statement, the settings refused at create/start and the
session setup: the answers MySQL and MariaDB document, then the real MariaDB."""

import random

import pytest

from changefeed.errors import ServerConfigError
from changefeed.source.binlog_reader import BinlogReader
from changefeed.source.capture import start_position
from changefeed.source.records import RowsRecord
from changefeed.source.server import ConnectionSettings, check_server, check_settings, session
from changefeed.source.server_version import binlog_status, parse_server_version, server_version
from lakefeed_testing import MySQLServer
from tests.changefeed.binlogs import purge_all_but_a_new_binlog

# (VERSION(), @@version_comment, MariaDB?, (major, minor, patch), statement)
ANSWERS = [
    ("8.0.36", "MySQL Community Server - GPL", False, (8, 0, 36), "SHOW MASTER STATUS"),
    ("8.0.36-0ubuntu0.22.04.1", "(Ubuntu)", False, (8, 0, 36), "SHOW MASTER STATUS"),
    ("8.0.35-27", "Percona Server (GPL), Release 27, Revision 2f8eeab2", False, (8, 0, 35), "SHOW MASTER STATUS"),
    ("8.1.0", "MySQL Community Server - GPL", False, (8, 1, 0), "SHOW MASTER STATUS"),
    ("8.2.0", "MySQL Community Server - GPL", False, (8, 2, 0), "SHOW BINARY LOG STATUS"),
    ("8.4.3", "MySQL Community Server - GPL", False, (8, 4, 3), "SHOW BINARY LOG STATUS"),
    ("8.4.0-commercial", "MySQL Enterprise Server - Commercial", False, (8, 4, 0), "SHOW BINARY LOG STATUS"),
    ("9.1.0", "MySQL Community Server - GPL", False, (9, 1, 0), "SHOW BINARY LOG STATUS"),
    ("10.11.6-MariaDB", "mariadb.org binary distribution", True, (10, 11, 6), "SHOW MASTER STATUS"),
    ("10.11.19-MariaDB-0+deb12u1-log", "Debian 12", True, (10, 11, 19), "SHOW MASTER STATUS"),
    ("5.5.5-10.11.6-MariaDB", "MariaDB Server", True, (10, 11, 6), "SHOW MASTER STATUS"),
    ("11.4.2-MariaDB-ubu2404", "mariadb.org binary distribution", True, (11, 4, 2), "SHOW MASTER STATUS"),
]


@pytest.mark.parametrize(("version", "comment", "mariadb", "number", "statement"), ANSWERS)
def test_documented_answers(version: str, comment: str, mariadb: bool, number: tuple[int, int, int],
                            statement: str) -> None:
    found = parse_server_version(version, comment)
    assert (found.is_mariadb, found.number, found.binlog_status_sql) == (mariadb, number, statement)


def test_unparsable_version_is_named() -> None:
    with pytest.raises(ValueError, match=r"'banana' does not start with MAJOR\.MINOR"):
        parse_server_version("banana")


def test_real_mariadb(settings: ConnectionSettings) -> None:
    with session(settings) as cur:
        found = server_version(cur)
        assert found.is_mariadb and found.number >= (10, 5, 0)
        assert found.binlog_status_sql == "SHOW MASTER STATUS"
        status = binlog_status(cur, found)
        cur.execute("SHOW BINARY LOGS")
        newest = cur.fetchall()[-1]
    assert status is not None
    assert status.file == newest[0] and 4 <= status.pos <= int(newest[1])
    assert status.executed_gtid_set == ""  # MariaDB has no Executed_Gtid_Set column


# Settings each version has that capture refuses, and the session setup it runs (server_version docstring).
@pytest.mark.parametrize(("version", "refused", "session_sql"), [
    ("8.0.2", [], ()),
    ("8.0.19", ["binlog_row_value_options"], ()),
    ("8.0.29", ["binlog_row_value_options", "binlog_transaction_compression"], ()),
    ("8.0.30", ["binlog_row_value_options", "binlog_transaction_compression"],
     ("SET SESSION show_gipk_in_create_table_and_information_schema = ON",)),
    ("8.4.3", ["binlog_row_value_options", "binlog_transaction_compression"],
     ("SET SESSION show_gipk_in_create_table_and_information_schema = ON",)),
    ("10.2.2-MariaDB", [], ()),
    ("10.11.6-MariaDB", ["log_bin_compress"], ()),
])
def test_version_specific_settings(version: str, refused: list[str], session_sql: tuple[str, ...]) -> None:
    found = parse_server_version(version)
    assert [s.name for s in found.refused_settings] == refused
    assert found.session_sql == session_sql


MYSQL_GOOD = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
              "binlog_row_value_options": "", "binlog_transaction_compression": "OFF"}
ALL = ["GRANT ALL PRIVILEGES ON *.* TO `u`@`%`"]


@pytest.mark.parametrize("version", ["8.0.36", "8.4.3"])
def test_mysql_answers_refused_at_create(version: str) -> None:
    """SHOW GLOBAL VARIABLES answers as MySQL 8.0/8.4 give them (Value '' for an empty SET variable)."""
    mysql8 = parse_server_version(version)
    check_settings(MYSQL_GOOD, ALL, mysql8)
    with pytest.raises(ServerConfigError) as err:
        check_settings(MYSQL_GOOD | {"binlog_transaction_compression": "ON"}, ALL, mysql8)
    assert "binlog_transaction_compression=ON" in str(err.value)
    assert "SET GLOBAL binlog_transaction_compression=OFF" in str(err.value) and not err.value.retriable
    with pytest.raises(ServerConfigError, match=r"binlog_row_value_options=PARTIAL_JSON: .*"
                                                r"SET GLOBAL binlog_row_value_options=''"):
        check_settings(MYSQL_GOOD | {"binlog_row_value_options": "PARTIAL_JSON"}, ALL, mysql8)


def test_real_mariadb_with_compressed_binlog_is_refused(mysql: MySQLServer, settings: ConnectionSettings) -> None:
    mysql.execute("SET GLOBAL log_bin_compress = ON")
    try:
        with pytest.raises(ServerConfigError, match=r"log_bin_compress=ON: .*SET GLOBAL log_bin_compress=OFF"):
            check_server(settings)
    finally:
        mysql.execute("SET GLOBAL log_bin_compress = OFF")


def test_real_mariadb_compressed_events_stop_the_reader(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    """Compression switched on after the changefeed started: the reader stops at the compressed event
    instead of skipping its rows (python-mysql-replication 1.0.17 does not decode them)."""
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", database=database)
    start = start_position(settings)
    mysql.execute("INSERT INTO t VALUES (1, 'plain')", database=database)
    mysql.execute("SET GLOBAL log_bin_compress = ON")
    try:
        # Events above log_bin_compress_min_len (256 bytes by default) are compressed.
        mysql.execute(f"INSERT INTO t VALUES (2, '{'x' * 2000}')", database=database)
    finally:
        mysql.execute("SET GLOBAL log_bin_compress = OFF")
    reader = BinlogReader(settings, start, is_mariadb=True, server_id=random.randint(10_000, 2**31),
                          blocking=False)
    rows = []
    try:
        with pytest.raises(ServerConfigError) as err:
            for record in reader:
                if isinstance(record, RowsRecord) and record.table == "t":
                    rows.extend(record.rows)
    finally:
        # Later tests that read the shared server's binlog from its oldest file would stop here too.
        purge_all_but_a_new_binlog(mysql)
    assert [r["values"]["id"] for r in rows] == [1]
    assert "compressed event" in str(err.value) and "SET GLOBAL log_bin_compress=OFF" in str(err.value)
