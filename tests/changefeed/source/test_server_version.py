"""Version detection decides the binlog status statement: the answers MySQL and MariaDB document,
then the real MariaDB."""

import pytest

from changefeed.source.server import ConnectionSettings, session
from changefeed.source.server_version import binlog_status, parse_server_version, server_version

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
