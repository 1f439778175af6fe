"""Server settings and privilege checks: pure rules, then against the real MariaDB."""

import uuid

import pytest

from changefeed.errors import PrivilegeError, ServerConfigError
from changefeed.source.server import ConnectionSettings, check_server, check_settings, missing_privileges
from changefeed.source.server_version import parse_server_version
from lakefeed_testing import MySQLServer

GOOD = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
ALL = ["GRANT ALL PRIVILEGES ON *.* TO `u`@`%`"]
MARIADB = parse_server_version("10.11.6-MariaDB")
MYSQL_84 = parse_server_version("8.4.3")


def test_each_missing_setting_is_named_with_its_fix() -> None:
    check_settings(GOOD, ALL, MARIADB)
    with pytest.raises(ServerConfigError, match=r"binlog_format=MIXED: set binlog_format=ROW") as err:
        check_settings(GOOD | {"binlog_format": "MIXED", "binlog_row_image": "MINIMAL"}, ALL, MARIADB)
    assert "binlog_row_image=MINIMAL" in str(err.value) and not err.value.retriable
    with pytest.raises(ServerConfigError, match="binlog_row_metadata is not supported"):
        check_settings({k: v for k, v in GOOD.items() if k != "binlog_row_metadata"}, ALL, MARIADB)
    with pytest.raises(ServerConfigError, match="--log-bin"):
        check_settings(GOOD | {"log_bin": "OFF"}, ALL, MARIADB)


def test_privileges() -> None:
    assert missing_privileges(ALL, MARIADB) == []
    grants = ["GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `u`@`%`"]
    assert missing_privileges(grants, True) == []
    grants = [
        "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `u`@`%`",
        "GRANT SELECT ON `db`.* TO `u`@`%`",
    ]
    assert missing_privileges(grants, False) == []
    assert missing_privileges(["GRANT USAGE ON *.* TO `u`@`%`"], True) == [
        "REPLICATION SLAVE",
        "BINLOG MONITOR",
        "SELECT",
    ]
    with pytest.raises(PrivilegeError, match="GRANT REPLICATION SLAVE, REPLICATION CLIENT ON"):
        check_settings(GOOD, ["GRANT SELECT ON *.* TO `u`@`%`"], MYSQL_84)


def test_real_server_passes(settings: ConnectionSettings) -> None:
    assert check_server(settings) is True  # MariaDB


def test_real_user_without_replication_grants(mysql: MySQLServer) -> None:
    user = f"ro_{uuid.uuid4().hex[:8]}"
    mysql.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'", f"GRANT SELECT ON *.* TO '{user}'@'%'")
    try:
        with pytest.raises(PrivilegeError, match="REPLICATION SLAVE, BINLOG MONITOR"):
            check_server(ConnectionSettings(mysql.host, mysql.port, user, "pw"))
    finally:
        mysql.execute(f"DROP USER '{user}'@'%'")


def test_real_server_with_minimal_row_metadata(mysql: MySQLServer, settings: ConnectionSettings) -> None:
    mysql.execute("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        with pytest.raises(
            ServerConfigError, match="binlog_row_metadata=MINIMAL: set binlog_row_metadata=FULL"
        ):
            check_server(settings)
    finally:
        mysql.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
