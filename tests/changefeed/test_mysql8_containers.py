"""Capture essentials against real MySQL 8.0 and 8.4 (testcontainers), where a Docker engine answers.

Skipped otherwise (the machine this project is built on has none): docs/development.md says how to run
them. Each image gets a least-privilege capture user with MySQL 8's default caching_sha2_password,
connected over plain TCP (the RSA public key exchange), and checks: version detection and the binlog
status statement (SHOW BINARY LOG STATUS on 8.4), create-time checks, snapshot and binlog rows with a
JSON column equal to what MySQL's SELECT returns, settings refused at create and at the event, and a
generated invisible primary key used as the key.
"""

from collections.abc import Iterator
from typing import Any

import pytest

from changefeed.errors import ServerConfigError
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint, RowChange, RowKind
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings, check_server, session
from changefeed.source.server_version import server_version
from lakefeed_testing import MySQLServer
from lakefeed_testing.mysql import docker_available, mysql_container
from tests.changefeed.conftest import capture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not docker_available(), reason=(
        "no Docker engine answers `docker info`: the MySQL 8.0/8.4 testcontainers tests need one "
        "(docs/development.md, 'MySQL 8.0 and 8.4')")),
]

IMAGES = {"mysql:8.0": (8, 0), "mysql:8.4": (8, 4)}
USER, PASSWORD = "capture", "capture-Pw-1"


@pytest.fixture(scope="module", params=sorted(IMAGES))
def root(request: pytest.FixtureRequest) -> Iterator[tuple[str, MySQLServer]]:
    with mysql_container(request.param, as_root=True) as server:
        server.execute(
            "CREATE DATABASE shop",
            f"CREATE USER '{USER}'@'%' IDENTIFIED WITH caching_sha2_password BY '{PASSWORD}'",
            # docs/runbooks/use-your-own-mysql.md: the least privileges capture needs on MySQL
            f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT, RELOAD ON *.* TO '{USER}'@'%'",
        )
        yield request.param, server


@pytest.fixture
def settings(root: tuple[str, MySQLServer]) -> ConnectionSettings:
    server = root[1]
    return ConnectionSettings(server.host, server.port, USER, PASSWORD, tls=False)


def _rows(events: list[Any]) -> list[RowChange]:
    return [e for e in events if isinstance(e, RowChange)]


def _json_text(server: MySQLServer, table: str, key: int) -> str:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT CAST(doc AS CHAR) FROM shop.{table} WHERE id = %s", (key,))
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def test_version_detection_and_create_checks(root: tuple[str, MySQLServer], settings: ConnectionSettings) -> None:
    image, _ = root
    assert check_server(settings) is False  # MySQL, settings and grants fine, caching_sha2 over TCP
    with session(settings) as cur:
        version = server_version(cur)
    assert not version.is_mariadb and version.number[:2] == IMAGES[image]
    assert version.binlog_status_sql == ("SHOW BINARY LOG STATUS" if IMAGES[image] >= (8, 2) else "SHOW MASTER STATUS")
    assert start_position(settings).pos >= 4


def test_snapshot_and_binlog_rows_with_json(root: tuple[str, MySQLServer], settings: ConnectionSettings) -> None:
    _, server = root
    server.execute(
        "CREATE TABLE shop.items (id INT PRIMARY KEY, doc JSON, price DECIMAL(8,2))",
        """INSERT INTO shop.items VALUES (1, '{"bb": [1, 2.5, null, true], "a": "x"}', 1.50)""")
    flt = ChangeFilter(TableFilter(["shop.items"]))
    snapshot = _rows(capture(settings, None, snapshot_mode="initial_only", change_filter=flt))
    first = _json_text(server, "items", 1)
    assert [(r.kind, r.after and r.after["doc"]) for r in snapshot] == [(RowKind.INSERT, first)]

    start = Checkpoint(start_position(settings), 0)
    server.execute(
        "INSERT INTO shop.items VALUES (2, JSON_OBJECT('t', CAST('2024-02-29 13:05:09.12' AS DATETIME(2)), "
        "'d', CAST(12.5 AS DECIMAL(4,2)), 'big', 1e20, 'neg', CAST('-01:00:00.5' AS TIME(1)), 'n', NULL), 3.00)",
        "UPDATE shop.items SET doc = JSON_SET(doc, '$.a', 'y'), price = 2.00 WHERE id = 1")
    second, updated = _json_text(server, "items", 2), _json_text(server, "items", 1)
    server.execute("DELETE FROM shop.items WHERE id = 1")
    rows = _rows(capture(settings, start, change_filter=flt))
    assert [(r.kind, r.before and r.before["doc"], r.after and r.after["doc"]) for r in rows] == [
        (RowKind.INSERT, None, second),
        (RowKind.UPDATE, first, updated),
        (RowKind.DELETE, updated, None),
    ]


@pytest.mark.parametrize(("variable", "value", "event"), [
    ("binlog_transaction_compression", "ON", "Transaction_payload_event"),
    ("binlog_row_value_options", "'PARTIAL_JSON'", "Partial_update_rows_event"),
])
def test_unreadable_settings_refused(root: tuple[str, MySQLServer], settings: ConnectionSettings,
                                     variable: str, value: str, event: str) -> None:
    _, server = root
    server.execute("CREATE TABLE IF NOT EXISTS shop.j (id INT PRIMARY KEY, doc JSON)",
                   """REPLACE INTO shop.j VALUES (1, '{"a": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "b": 1}')""")
    server.execute(f"SET GLOBAL {variable} = {value}")
    try:
        with pytest.raises(ServerConfigError, match=f"{variable}=.*SET GLOBAL {variable}="):
            check_server(settings)
    finally:
        server.execute(f"SET GLOBAL {variable} = DEFAULT")
    # Set in one writing session only: create-time checks pass, the event itself stops capture.
    start = Checkpoint(start_position(settings), 0)
    server.execute(f"SET SESSION {variable} = {value}",
                   "UPDATE shop.j SET doc = JSON_SET(doc, '$.b', 2) WHERE id = 1")
    with pytest.raises(ServerConfigError, match=f"{event}.*{variable}"):
        capture(settings, start, change_filter=ChangeFilter(TableFilter(["shop.j"])))


def test_generated_invisible_primary_key_is_the_key(root: tuple[str, MySQLServer],
                                                    settings: ConnectionSettings) -> None:
    _, server = root
    server.execute("SET GLOBAL show_gipk_in_create_table_and_information_schema = OFF")
    try:
        start = Checkpoint(start_position(settings), 0)
        server.execute("SET SESSION sql_generate_invisible_primary_key = ON",
                       "CREATE TABLE shop.nokey (v INT, note VARCHAR(10))",
                       "INSERT INTO shop.nokey VALUES (1, 'a'), (2, 'b')",
                       "DELETE FROM shop.nokey WHERE v = 1")
        rows = _rows(capture(settings, start, change_filter=ChangeFilter(TableFilter(["shop.nokey"]))))
    finally:
        server.execute("SET GLOBAL show_gipk_in_create_table_and_information_schema = ON")
    assert [(r.kind, r.before, r.after) for r in rows] == [
        (RowKind.INSERT, None, {"my_row_id": 1, "v": 1, "note": "a"}),
        (RowKind.INSERT, None, {"my_row_id": 2, "v": 2, "note": "b"}),
        (RowKind.DELETE, {"my_row_id": 1, "v": 1, "note": "a"}, None),
    ]
    assert {r.table.primary_key for r in rows} == {("my_row_id",)}
