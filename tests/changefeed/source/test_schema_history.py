"""DDL mid-stream: rows before and after each change decode with the schema in force at their
position, also when replayed from an older checkpoint (capture runs after all DDL happened, so
information_schema only knows the final state)."""

from pathlib import Path
from typing import Any

from changefeed.ddl_parse import parse_ddl
from changefeed.model import DDLEvent, DDLKind, Position, RowChange, TableName, TransactionCommit
from changefeed.source.column_types import InfoColumn
from changefeed.source.records import BinlogColumn, TableMap
from changefeed.source.schema_store import SchemaStore
from changefeed.source.schema_tracker import SchemaTracker
from changefeed.source.server import ConnectionSettings, TableInfo, fetch_table_info, session
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


def test_a_table_created_filled_and_dropped_before_capture_keeps_its_key(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: object, tmp_path: Path
) -> None:
    """The key of rows whose table is gone from the server comes from the binlog (TABLE_MAP), also for a
    key on a column prefix (PRIMARY_KEY_WITH_PREFIX), and while the table exists it agrees with the server."""
    mysql.execute(
        "/* migration 920 */ CREATE TABLE `tmp2` (`id` INT NOT NULL, `dt` DATE, `ts` TIMESTAMP NULL, `n` INT,"
        " PRIMARY KEY (`id`)) DEFAULT CHARSET=utf8mb4",
        "INSERT INTO `tmp2` (`id`, `dt`, `n`) VALUES (222, '8610-02-16', 1), (73, NULL, 2), (23, '3411-05-28', 3)",
        "# gh-ost style note\nDROP TABLE `tmp2`",
        "CREATE TABLE prefixed (name VARCHAR(100) NOT NULL, v INT, PRIMARY KEY (name(10), v))",
        "INSERT INTO prefixed VALUES ('a', 1)",
        "CREATE TABLE kept (name VARCHAR(100) NOT NULL, v INT NOT NULL, PRIMARY KEY (v, name(10)))",
        "INSERT INTO kept VALUES ('b', 2)",
        "DROP TABLE prefixed",
        database=database,
    )
    events = capture(settings, here, schema_store_url=f"sqlite:///{tmp_path / 'schemas.db'}")  # type: ignore[arg-type]
    rows = [e for e in events if isinstance(e, RowChange) and e.table.schema == database]
    assert [(r.table.table, set(r.table.primary_key)) for r in rows] == [
        ("tmp2", {"id"}), ("tmp2", {"id"}), ("tmp2", {"id"}), ("prefixed", {"name", "v"}), ("kept", {"name", "v"})]


class DropsTheTableBetweenItsQueries:
    """A cursor on the real server that lets a DROP TABLE commit right after fetch_table_info's first read
    of the columns: the interleaving the equality long run met (seed 16, broker-node fault), where a
    table created, filled and dropped within milliseconds was recorded without its primary key."""

    def __init__(self, cursor: Any, mysql: MySQLServer, table: TableName) -> None:
        self._cursor, self._mysql, self._table = cursor, mysql, table
        self._dropped = False

    def execute(self, sql: str, args: object = None) -> None:
        self._cursor.execute(sql, args)

    def fetchall(self) -> Any:
        rows = self._cursor.fetchall()
        if not self._dropped:
            self._dropped = True
            self._mysql.execute(f"DROP TABLE `{self._table.schema}`.`{self._table.table}`")
        return rows


def test_a_table_dropped_while_information_schema_is_read_reads_as_gone(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE tmp2 (id INT NOT NULL, n INT, PRIMARY KEY (id))", database=database)
    table = TableName(database, "tmp2")
    with session(settings) as cursor:
        assert fetch_table_info(cursor, table) is not None  # the table as it is
        assert fetch_table_info(DropsTheTableBetweenItsQueries(cursor, mysql, table), table) is None


def _map(*columns: BinlogColumn, table_id: int = 7, at: int = 400) -> TableMap:
    return TableMap(table_id, "shop", "t", columns, Position("binlog.000001", at))


def _info(primary_key: tuple[str, ...]) -> TableInfo:
    """shop.t (id INT NOT NULL, n INT) as information_schema describes it, with `primary_key`."""
    return TableInfo(TableName("shop", "t"), (
        InfoColumn("id", "int", "int", False, None, None, None, False, False),
        InfoColumn("n", "int", "int", True, None, None, None, False, False)), primary_key, ())


def test_the_table_maps_key_wins_over_a_version_read_without_one() -> None:
    """Pure tracker logic: a version recorded from information_schema without the key (the race above,
    or any other reason) does not hide the key the TABLE_MAP gives for the rows that follow."""
    info = _info(())
    tracker = SchemaTracker(SchemaStore(), lambda name: info)
    create = parse_ddl("CREATE TABLE t (id INT PRIMARY KEY, n INT)", "shop")
    assert create is not None
    tracker.apply_ddl(create, Position("binlog.000001", 300))
    assert tracker.at(TableName("shop", "t"), Position("binlog.000001", 350)).primary_key == ()  # type: ignore[union-attr]
    keyed = _map(BinlogColumn("id", 3, nullable=False, primary=True), BinlogColumn("n", 3))
    assert tracker.mounter(keyed).schema.primary_key == ("id",)
    # and a TABLE_MAP without a key (the table's key was dropped) is not given the old one
    tracker.forget_table_ids()
    unkeyed = _map(BinlogColumn("id", 3, nullable=False), BinlogColumn("n", 3))
    assert tracker.mounter(unkeyed).schema.primary_key == ()


def test_a_key_added_after_the_rows_is_not_theirs() -> None:
    """Pure tracker logic: with no version recorded (the table predates capture), rows written before
    `ALTER TABLE t ADD PRIMARY KEY (id)` keep the TABLE_MAP's answer (no key), though information_schema,
    read later, names one; the rows after the ALTER get it from their own TABLE_MAP."""
    info = _info(("id",))
    tracker = SchemaTracker(SchemaStore(), lambda name: info)
    unkeyed = _map(BinlogColumn("id", 3, nullable=False), BinlogColumn("n", 3))
    assert tracker.mounter(unkeyed).schema.primary_key == ()
    tracker.forget_table_ids()
    keyed = _map(BinlogColumn("id", 3, nullable=False, primary=True), BinlogColumn("n", 3), table_id=8, at=900)
    assert tracker.mounter(keyed).schema.primary_key == ("id",)


def test_a_ddl_carries_the_sessions_time_zone_when_it_used_it(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: object
) -> None:
    """The Query event's time_zone status variable, on the real server: written for a DDL that evaluated
    CURRENT_TIMESTAMP in a session zone (`-8:00` as the server normalizes it), not for one that did not."""
    mysql.execute(
        "CREATE TABLE z (id INT PRIMARY KEY)",
        "SET time_zone = '-8:00'",
        "ALTER TABLE z ADD COLUMN plain INT",
        "ALTER TABLE z ADD COLUMN added DATETIME DEFAULT CURRENT_TIMESTAMP",
        database=database,
    )
    events = capture(settings, here)  # type: ignore[arg-type]
    assert [(e.sql, e.time_zone) for e in events if isinstance(e, DDLEvent) and e.database == database] == [
        ("CREATE TABLE z (id INT PRIMARY KEY)", ""), ("ALTER TABLE z ADD COLUMN plain INT", ""),
        ("ALTER TABLE z ADD COLUMN added DATETIME DEFAULT CURRENT_TIMESTAMP", "-08:00")]
