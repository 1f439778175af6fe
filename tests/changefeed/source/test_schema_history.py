"""DDL mid-stream: rows before and after each change decode with the schema in force at their
position, also when replayed from an older checkpoint (capture runs after all DDL happened, so
information_schema only knows the final state)."""

from pathlib import Path

from changefeed.model import DDLEvent, DDLKind, RowChange, TransactionCommit
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture

STATEMENTS = [
    "CREATE TABLE t (id int PRIMARY KEY, a varchar(10), b int)",
    "INSERT INTO t VALUES (1, 'x', 1)",
    "ALTER TABLE t ADD COLUMN c int NOT NULL DEFAULT 0",
    "INSERT INTO t VALUES (2, 'y', 2, 3)",
    "ALTER TABLE t DROP COLUMN b",
    "INSERT INTO t VALUES (3, 'z', 4)",
    "ALTER TABLE t RENAME COLUMN a TO a2",
    "UPDATE t SET a2 = 'w' WHERE id = 3",
    "ALTER TABLE t MODIFY a2 varchar(40)",
    "INSERT INTO t VALUES (4, 'long enough to need forty', 5)",
    "RENAME TABLE t TO u",
    "DELETE FROM u WHERE id = 1",
    "TRUNCATE TABLE u",
    "INSERT INTO u VALUES (5, 'after truncate', 6)",
    "CREATE TABLE v (k int PRIMARY KEY, UNIQUE KEY uk (k))",
    "DROP TABLE v",
]
EXPECTED_ROWS = [  # (table, kind, columns, type of the text column)
    ("t", "INSERT", ("id", "a", "b"), "varchar(10)"),
    ("t", "INSERT", ("id", "a", "b", "c"), "varchar(10)"),
    ("t", "INSERT", ("id", "a", "c"), "varchar(10)"),
    ("t", "UPDATE", ("id", "a2", "c"), "varchar(10)"),
    ("t", "INSERT", ("id", "a2", "c"), "varchar(40)"),
    ("u", "DELETE", ("id", "a2", "c"), "varchar(40)"),
    ("u", "INSERT", ("id", "a2", "c"), "varchar(40)"),
]
EXPECTED_DDL = [
    (DDLKind.CREATE_TABLE, ["t"]),
    (DDLKind.ALTER_TABLE, ["t"]),
    (DDLKind.ALTER_TABLE, ["t"]),
    (DDLKind.ALTER_TABLE, ["t"]),
    (DDLKind.ALTER_TABLE, ["t"]),
    (DDLKind.RENAME_TABLE, ["t", "u"]),
    (DDLKind.TRUNCATE_TABLE, ["u"]),
    (DDLKind.CREATE_TABLE, ["v"]),
    (DDLKind.DROP_TABLE, ["v"]),
]


def _summary(events: list[object], database: str) -> list[tuple[str, str, tuple[str, ...], str]]:
    out = []
    for e in events:
        if isinstance(e, RowChange) and e.table.schema == database:
            text = next(c for c in e.table.columns if c.name in ("a", "a2"))
            assert tuple(e.row) == e.table.column_names  # values decoded under this very schema
            out.append((e.table.table, e.kind.value, e.table.column_names, text.mysql_type))
    return out


def _ddl(events: list[object], database: str) -> list[tuple[DDLKind, list[str]]]:
    return [
        (e.kind, [t.table for t in e.tables])
        for e in events
        if isinstance(e, DDLEvent) and e.database == database
    ]


def test_ddl_mid_stream_and_replay(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: object, tmp_path: Path
) -> None:
    mysql.execute(*STATEMENTS, database=database)
    store = f"sqlite:///{tmp_path / 'schemas.db'}"

    first = capture(settings, here, schema_store_url=store)  # type: ignore[arg-type]
    assert _summary(first, database) == EXPECTED_ROWS
    assert _ddl(first, database) == EXPECTED_DDL
    rows = [e for e in first if isinstance(e, RowChange)]
    assert rows[0].table.primary_key == ("id",)
    assert rows[1].table.column("c").nullable is False
    assert [r.commit_ts for r in rows] == sorted({r.commit_ts for r in rows})

    # Replay everything with the stored history: identical schemas, values and timestamps.
    again = capture(settings, here, schema_store_url=store)  # type: ignore[arg-type]
    assert [e for e in again if isinstance(e, RowChange)] == rows

    # Replay from the checkpoint right after the first ALTER, with and without the stored history.
    commits = [e for e in first if isinstance(e, TransactionCommit)]
    after_alter = next(
        c
        for c in commits
        if c.checkpoint.position
        >= next(e for e in first if isinstance(e, DDLEvent) and e.kind is DDLKind.ALTER_TABLE).position
    )
    for url in (store, f"sqlite:///{tmp_path / 'fresh.db'}"):
        replay = capture(settings, after_alter.checkpoint, schema_store_url=url)
        assert _summary(replay, database) == EXPECTED_ROWS[1:]
    replayed = [
        e
        for e in capture(settings, after_alter.checkpoint, schema_store_url=store)
        if isinstance(e, RowChange)
    ]
    assert replayed == rows[1:]
