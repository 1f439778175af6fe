"""DDL events name the schema of the table they touch, not the session's default database, and the
schema history applies each DDL to that table (so later rows decode with the new columns).

Run through a real MariaDB: sessions without a default database (how migration tools write DDL) and
with `USE` of another database run qualified statements."""

import uuid
from collections.abc import Iterator

import pytest

from changefeed.model import Checkpoint, DDLEvent, DDLKind, RowChange
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture


@pytest.fixture
def two_databases(mysql: MySQLServer) -> Iterator[tuple[str, str]]:
    names = (f"shop_{uuid.uuid4().hex[:8]}", f"other_{uuid.uuid4().hex[:8]}")
    for name in names:
        mysql.execute(f"CREATE DATABASE `{name}`")
    yield names
    for name in names:
        mysql.execute(f"DROP DATABASE IF EXISTS `{name}`")


def _ddl(events: list[object], *databases: str) -> list[tuple[DDLKind, str, list[str]]]:
    return [(e.kind, e.database, [str(t) for t in e.tables]) for e in events
            if isinstance(e, DDLEvent) and (e.database in databases or any(t.schema in databases for t in e.tables))]


def _rows(events: list[object], table: str) -> list[RowChange]:
    return [e for e in events if isinstance(e, RowChange) and str(e.table.name) == table]


def test_qualified_ddl_from_a_session_without_default_database(
    mysql: MySQLServer, two_databases: tuple[str, str], settings: ConnectionSettings
) -> None:
    shop, other = two_databases
    mysql.execute(
        f"CREATE TABLE {shop}.orders (id int PRIMARY KEY, note varchar(10), qty int)",
        f"CREATE TABLE {shop}.gone (id int PRIMARY KEY)",
        f"CREATE TABLE {other}.gone2 (id int PRIMARY KEY)",
        f"CREATE TABLE {shop}.moving (id int PRIMARY KEY)",
        f"CREATE TABLE {shop}.tpl (id int PRIMARY KEY, v int)",
    )
    here = Checkpoint(start_position(settings), 0)
    mysql.execute(
        f"ALTER TABLE {shop}.orders DROP COLUMN note",
        f"INSERT INTO {shop}.orders VALUES (1, 5)",
        f"ALTER TABLE /* why */ `{shop}`.`orders` RENAME COLUMN qty TO amount",
        f"INSERT INTO {shop}.orders VALUES (2, 6)",
        f"DROP TABLE {shop}.gone, {other}.gone2",
        f"RENAME TABLE {shop}.moving TO {other}.moved",
        f"CREATE TABLE {other}.copy LIKE {shop}.tpl",
        f"INSERT INTO {other}.copy VALUES (1, 2)",
    )  # no database: the session has no default one
    events = capture(settings, here)
    assert _ddl(events, shop, other) == [
        (DDLKind.ALTER_TABLE, shop, [f"{shop}.orders"]),
        (DDLKind.ALTER_TABLE, shop, [f"{shop}.orders"]),
        (DDLKind.DROP_TABLE, shop, [f"{shop}.gone"]),
        (DDLKind.DROP_TABLE, other, [f"{other}.gone2"]),
        (DDLKind.RENAME_TABLE, other, [f"{shop}.moving", f"{other}.moved"]),
        (DDLKind.CREATE_TABLE, other, [f"{other}.copy"]),
    ]
    rows = _rows(events, f"{shop}.orders")
    assert [r.table.column_names for r in rows] == [("id", "qty"), ("id", "amount")]
    assert [dict(r.row) for r in rows] == [{"id": 1, "qty": 5}, {"id": 2, "amount": 6}]
    copy = _rows(events, f"{other}.copy")
    assert [dict(r.row) for r in copy] == [{"id": 1, "v": 2}]
    ddl = [e for e in events if isinstance(e, DDLEvent)]
    assert all(e.database for e in ddl)


def test_qualified_alter_from_a_session_in_another_database(
    mysql: MySQLServer, two_databases: tuple[str, str], settings: ConnectionSettings
) -> None:
    shop, other = two_databases
    mysql.execute(f"CREATE TABLE {shop}.orders (id int PRIMARY KEY, note varchar(10))",
                  f"CREATE TABLE {other}.orders (id int PRIMARY KEY, note varchar(10))")
    here = Checkpoint(start_position(settings), 0)
    mysql.execute(
        f"/*!40101 ALTER TABLE {shop}.orders ADD COLUMN extra int */",
        f"INSERT INTO {shop}.orders VALUES (1, 'a', 7)",
        "INSERT INTO orders VALUES (1, 'b')",  # the session's own `orders` keeps its columns
        "ALTER TABLE orders ADD COLUMN mine int, DROP COLUMN note",
        f"INSERT INTO {shop}.orders VALUES (2, 'c', 8)",
        f"RENAME TABLE orders TO {shop}.mine",  # unqualified name: the session's database
        database=other,
    )
    events = capture(settings, here)
    assert _ddl(events, shop, other) == [
        (DDLKind.ALTER_TABLE, shop, [f"{shop}.orders"]),
        (DDLKind.ALTER_TABLE, other, [f"{other}.orders"]),
        (DDLKind.RENAME_TABLE, shop, [f"{other}.orders", f"{shop}.mine"]),
    ]
    rename = [e for e in events if isinstance(e, DDLEvent)][-1]
    # Read with the event's database as default, the SQL must still name the session's table.
    assert rename.sql == f"RENAME TABLE `{other}`.`orders` TO `{shop}`.`mine`"
    shop_rows = _rows(events, f"{shop}.orders")
    assert [dict(r.row) for r in shop_rows] == [{"id": 1, "note": "a", "extra": 7}, {"id": 2, "note": "c", "extra": 8}]
    assert [dict(r.row) for r in _rows(events, f"{other}.orders")] == [{"id": 1, "note": "b"}]
