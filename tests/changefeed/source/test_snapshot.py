"""Initial snapshot while writers keep writing: snapshot rows plus the stream from the snapshot's
binlog position reproduce the final tables exactly."""

import random
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from changefeed.filter import ChangeFilter, EventFilterRule, TableFilter
from changefeed.model import DDLEvent, DDLKind, RowChange, RowKind, TransactionCommit
from changefeed.source.capture import CaptureSource
from changefeed.source.server import ConnectionSettings
from changefeed.source.snapshot import SnapshotProgress
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import options

TABLES = {  # name -> (DDL, key columns)
    "a": ("CREATE TABLE a (id int PRIMARY KEY, v varchar(20), f float)", ("id",)),
    "b": ("CREATE TABLE b (x int, y varchar(10), v int, PRIMARY KEY (x, y))", ("x", "y")),
    "c": ("CREATE TABLE c (u int NOT NULL, v int, UNIQUE KEY (u))", ("u",)),
}


class Writer(threading.Thread):
    def __init__(self, mysql: MySQLServer, database: str) -> None:
        super().__init__(daemon=True)
        self.mysql, self.database = mysql, database
        self.stop = threading.Event()
        self.count = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(3)
        try:
            with self.mysql.connect(self.database) as conn, conn.cursor() as cur:
                while not self.stop.is_set() and self.count < 5000:
                    n = rng.randint(1, 1200)
                    op = rng.random()
                    if op < 0.4:
                        cur.execute(
                            "INSERT INTO a VALUES (%s, 'w', 1.5) ON DUPLICATE KEY UPDATE v = 'u'", (n,)
                        )
                    elif op < 0.6:
                        cur.execute("DELETE FROM a WHERE id = %s", (n,))
                    elif op < 0.8:
                        cur.execute("UPDATE b SET v = v + 1 WHERE x = %s", (n % 100,))
                    else:
                        cur.execute("REPLACE INTO c VALUES (%s, %s)", (n, self.count))
                    self.count += 1
        except BaseException as exc:  # surfaced by the test
            self.error = exc


def _key(change: RowChange, image: Any) -> tuple[Any, ...]:
    return tuple(image[k] for k in TABLES[change.table.table][1])


def _table(mysql: MySQLServer, database: str, name: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    keys = TABLES[name][1]
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {name}")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    for row in rows:
        if row.get("f") is not None:
            row["f"] = 1.5  # exact in float32
    return {tuple(r[k] for k in keys): r for r in rows}


def _seed(mysql: MySQLServer, database: str) -> None:
    mysql.execute(*(ddl for ddl, _ in TABLES.values()), database=database)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO a VALUES (%s, %s, 1.5)", [(i, f"v{i}") for i in range(1, 1001)])
        cur.executemany("INSERT INTO b VALUES (%s, %s, 0)", [(i % 100, f"y{i}") for i in range(600)])
        cur.executemany("INSERT INTO c VALUES (%s, 0)", [(i,) for i in range(300)])


def test_snapshot_while_writing(mysql: MySQLServer, database: str, settings: ConnectionSettings) -> None:
    _seed(mysql, database)
    writer = Writer(mysql, database)
    progress: list[SnapshotProgress] = []

    def on_progress(p: SnapshotProgress) -> None:
        progress.append(p)
        seen = writer.count
        deadline = time.monotonic() + 2
        while writer.count < seen + 3 and time.monotonic() < deadline and writer.is_alive():
            time.sleep(0.001)  # let writes land between chunks

    change_filter = ChangeFilter(TableFilter([f"{database}.*"]))
    source = CaptureSource(
        settings,
        options(snapshot_mode="initial", change_filter=change_filter, snapshot_chunk_size=150),
        on_progress=on_progress,
    )
    state: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {name: {} for name in TABLES}
    snapshot_rows = 0
    writer.start()
    try:
        for event in source.events():
            if isinstance(event, TransactionCommit) and snapshot_rows and not writer.stop.is_set():
                writer.stop.set()  # snapshot done: stop writing, then stream to the end
                writer.join(30)
            if not isinstance(event, RowChange):
                continue
            snapshot_rows += event.snapshot
            table = state[event.table.table]
            if event.before is not None:
                table.pop(_key(event, event.before))
            if event.after is not None:
                assert (
                    event.snapshot
                    or event.kind is not RowKind.INSERT
                    or _key(event, event.after) not in table
                )
                table[_key(event, event.after)] = dict(event.after)
    finally:
        writer.stop.set()
        source.close()
    assert writer.error is None
    assert writer.count > 50, "writes must overlap the snapshot"
    assert snapshot_rows >= 1000
    assert [p.table.table for p in progress if p.done] == ["a", "b", "c"]
    assert progress[-1].rows_read > 0
    for name in TABLES:
        assert state[name] == _table(mysql, database, name), name


def test_snapshot_modes(mysql: MySQLServer, database: str, settings: ConnectionSettings) -> None:
    mysql.execute("CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1), (2)", database=database)
    change_filter = ChangeFilter(TableFilter([f"{database}.*"]))

    def run(mode: str) -> list[object]:
        source = CaptureSource(settings, options(snapshot_mode=mode, change_filter=change_filter))
        try:
            return list(source.events())
        finally:
            source.close()

    only = run("initial_only")
    assert [e.after for e in only if isinstance(e, RowChange)] == [{"id": 1}, {"id": 2}]
    assert isinstance(only[-1], TransactionCommit)
    assert [e for e in run("never") if isinstance(e, RowChange)] == []


def _two_table_snapshot(mysql: MySQLServer, database: str, settings: ConnectionSettings) -> CaptureSource:
    """Tables a (1, 2) and b (10, 11), and a source that will snapshot them (a first)."""
    mysql.execute("CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1), (2)",
                  "CREATE TABLE b (id int PRIMARY KEY)", "INSERT INTO b VALUES (10), (11)", database=database)
    change_filter = ChangeFilter(TableFilter([f"{database}.*"]))
    return CaptureSource(settings, options(snapshot_mode="initial_only", change_filter=change_filter))


@pytest.mark.parametrize("algorithm", ["COPY", "INSTANT"])
def test_a_table_altered_under_the_snapshot_makes_it_start_over(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, algorithm: str
) -> None:
    """InnoDB cannot read a table rebuilt after the read view opened (error 1412), and an instant ALTER changes
    the columns SHOW CREATE TABLE shows from those read at the snapshot's position: either way the snapshot is
    taken again, and every row arrives with the new definition; nothing is lost."""
    source = _two_table_snapshot(mysql, database, settings)
    try:
        events = source.events()
        creates_a = next(events)  # the tables are listed, their CREATE TABLE read, b's rows not read yet
        assert isinstance(creates_a, DDLEvent) and creates_a.tables[0].table == "a"
        first = next(events)  # a's first row
        assert isinstance(first, RowChange) and first.table.table == "a"
        mysql.execute(f"ALTER TABLE b ADD COLUMN w int NOT NULL DEFAULT 7, ALGORITHM={algorithm}", database=database)
        rest = list(events)
    finally:
        source.close()
    rows = [(e.table.table, dict(e.after or {})) for e in [first, *rest] if isinstance(e, RowChange)]
    assert rows == [("a", {"id": 1}), ("a", {"id": 2}),  # the first attempt, until b could not be read
                    ("a", {"id": 1}), ("a", {"id": 2}), ("b", {"id": 10, "w": 7}), ("b", {"id": 11, "w": 7})]
    # The second attempt's CREATE TABLE of b is the rebuilt definition.
    assert "`w` int(11) NOT NULL DEFAULT 7" in [e for e in rest if isinstance(e, DDLEvent)][-1].sql
    assert isinstance(rest[-1], TransactionCommit) and rest[-1].checkpoint.position.file


def test_a_snapshot_taken_again_drops_a_table_gone_since_the_earlier_attempt(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    """Found by the equality harness (seed 11): the first attempt sent rows of `a`, then `a` was renamed and the
    snapshot started over after the RENAME; nothing told a consumer that `a` was gone, so its rows stayed. The
    attempt taken again now sends DROP TABLE IF EXISTS `a` before its own tables."""
    source = _two_table_snapshot(mysql, database, settings)
    try:
        events = source.events()
        assert isinstance(next(events), DDLEvent)  # a's CREATE TABLE
        first = next(events)  # a's first row: sent, as far as a consumer knows
        assert isinstance(first, RowChange) and first.table.table == "a"
        # The RENAME waits for the snapshot's transaction (it read `a`); the ALTER of `b`, not read yet, makes
        # the snapshot start over when it gets to `b`, and its RENAME then runs before the next attempt's lock.
        renamer = threading.Thread(target=mysql.execute, args=("RENAME TABLE a TO a2",),
                                   kwargs={"database": database}, daemon=True)
        renamer.start()
        deadline = time.monotonic() + 30
        with mysql.connect(database) as conn, conn.cursor() as cur:
            while True:
                cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'RENAME TABLE a%%'")
                if cur.fetchone()[0]:
                    break
                assert time.monotonic() < deadline, "the RENAME never started"
                time.sleep(0.05)
        mysql.execute("ALTER TABLE b ADD COLUMN w int NOT NULL DEFAULT 7, ALGORITHM=COPY", database=database)
        rest = list(events)
        renamer.join(30)
        assert not renamer.is_alive()
    finally:
        source.close()
    ddl = [(e.kind, [t.table for t in e.tables], e.sql) for e in rest if isinstance(e, DDLEvent)]
    assert ddl[0] == (DDLKind.DROP_TABLE, ["a"], f"DROP TABLE IF EXISTS `{database}`.`a`")
    assert [(kind, tables) for kind, tables, _ in ddl[1:]] == [(DDLKind.CREATE_TABLE, ["a2"]),
                                                              (DDLKind.CREATE_TABLE, ["b"])]
    rows = [(e.table.table, dict(e.after or {})) for e in rest if isinstance(e, RowChange)]
    assert rows[-4:] == [("a2", {"id": 1}), ("a2", {"id": 2}), ("b", {"id": 10, "w": 7}), ("b", {"id": 11, "w": 7})]
    assert isinstance(rest[-1], TransactionCommit)


def test_a_snapshot_taken_again_by_another_process_drops_a_table_gone_since_the_earlier_attempt(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, tmp_path: Path
) -> None:
    """Found by the equality harness (seed 11, a changefeed server killed -9 mid-snapshot): the server that took
    over took the snapshot again after `a` was renamed, and the first attempt's rows of `a` stayed downstream.
    The new process knows the earlier attempt's tables from the durable schema history they share."""
    mysql.execute("CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1), (2)",
                  "CREATE TABLE b (id int PRIMARY KEY)", "INSERT INTO b VALUES (10)", database=database)
    history = f"sqlite:///{tmp_path / 'metadata.db'}"
    feed = options(snapshot_mode="initial", change_filter=ChangeFilter(TableFilter([f"{database}.*"])),
                   schema_store_url=history, changefeed_id="cf-taken-over")
    first = CaptureSource(settings, feed)
    try:
        events = first.events()
        assert isinstance(next(events), DDLEvent)  # a's CREATE TABLE
        row = next(events)  # a's first row: sent, as far as a consumer knows; then the process dies
        assert isinstance(row, RowChange) and row.table.table == "a"
        events.close()  # its connection goes, as a killed process's does (ending the snapshot's transaction)
    finally:
        first.close()
    mysql.execute("RENAME TABLE a TO a2", database=database)
    unrelated = CaptureSource(settings, replace(feed, changefeed_id="cf-other", snapshot_mode="initial_only"))
    again = CaptureSource(settings, replace(feed, snapshot_mode="initial_only"))
    try:
        others = list(unrelated.events())
        rest = list(again.events())
    finally:
        unrelated.close()
        again.close()
    ddl = [(e.kind, [t.table for t in e.tables], e.sql) for e in rest if isinstance(e, DDLEvent)]
    assert ddl[0] == (DDLKind.DROP_TABLE, ["a"], f"DROP TABLE IF EXISTS `{database}`.`a`")
    assert [(kind, tables) for kind, tables, _ in ddl[1:]] == [(DDLKind.CREATE_TABLE, ["a2"]),
                                                              (DDLKind.CREATE_TABLE, ["b"])]
    # another changefeed's history holds nothing of `a`: it drops nothing
    assert [e.kind for e in others if isinstance(e, DDLEvent)] == [DDLKind.CREATE_TABLE, DDLKind.CREATE_TABLE]
    # and a third attempt finds `a` recorded as gone: no second DROP
    third = CaptureSource(settings, replace(feed, snapshot_mode="initial_only"))
    try:
        kinds = [e.kind for e in third.events() if isinstance(e, DDLEvent)]
    finally:
        third.close()
    assert kinds == [DDLKind.CREATE_TABLE, DDLKind.CREATE_TABLE]


def test_a_float_read_by_the_snapshot_equals_the_same_float_in_a_row_event(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    """Found by the random equality harness: the server prints FLOAT with 6 significant digits, so a snapshot
    row carried 1.23457 where the binlog carries the stored 1.2345677614212036 (a difference Delta kept)."""
    mysql.execute("CREATE TABLE fl (id int PRIMARY KEY, f float)", "INSERT INTO fl VALUES (1, 1.2345678)",
                  database=database)
    change_filter = ChangeFilter(TableFilter([f"{database}.*"]))
    source = CaptureSource(settings, options(snapshot_mode="initial", change_filter=change_filter))
    try:
        events = source.events()
        snapshot_row = next(e for e in events if isinstance(e, RowChange))
        mysql.execute("INSERT INTO fl VALUES (2, 1.2345678)", database=database)
        streamed = next(e for e in events if isinstance(e, RowChange) and e.after and e.after["id"] == 2)
    finally:
        source.close()
    assert snapshot_row.after is not None and streamed.after is not None
    assert snapshot_row.after["f"] == streamed.after["f"] != 1.23457


def test_a_ddl_racing_the_snapshot_start_waits_until_its_schemas_are_read(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, monkeypatch: Any
) -> None:
    """Found by the equality harness (concurrent snapshot): information_schema is not versioned like rows, so a
    DDL committed after the snapshot's binlog position but before a table's schema was read gave the snapshot
    position the schema after that DDL, and the binlog rows between the position and the DDL were read with it.
    Now the schemas are read under the global read lock that fixes the position: the racing writes wait; a
    DDL that lands before a table's rows are read makes the snapshot start over. Either way every row carries
    the columns of its own schema, and row 3 arrives once, with the value it had when it was written."""
    from changefeed.source.schema_tracker import SchemaTracker

    mysql.execute("CREATE TABLE a (id int PRIMARY KEY, v int)", "INSERT INTO a VALUES (1, 10)", database=database)
    racer = threading.Thread(target=mysql.execute, daemon=True, kwargs={"database": database},
                             args=("INSERT INTO a VALUES (3, 30)", "ALTER TABLE a DROP COLUMN v"))
    read_schema = SchemaTracker.snapshot_schema

    def writes_first(self: SchemaTracker, *args: Any) -> Any:
        if racer.ident is None:
            racer.start()
            racer.join(timeout=2)  # they commit at once when nothing holds them back
        return read_schema(self, *args)

    monkeypatch.setattr(SchemaTracker, "snapshot_schema", writes_first)
    change_filter = ChangeFilter(TableFilter([f"{database}.*"]))
    source = CaptureSource(settings, options(snapshot_mode="initial", change_filter=change_filter))
    rows: list[RowChange] = []
    marked = False
    try:
        for event in source.events():
            if isinstance(event, RowChange):
                rows.append(event)
                if event.after == {"id": 2}:
                    break
            elif isinstance(event, TransactionCommit) and not marked:  # the snapshot's commit: a marker row
                racer.join(timeout=30)
                mysql.execute("INSERT INTO a VALUES (2)", database=database)
                marked = True
    finally:
        source.close()
    for row in rows:
        assert tuple(row.after or {}) == row.table.column_names, row
    threes = [(row.snapshot, row.after) for row in rows if row.after and row.after["id"] == 3]
    assert threes in ([(False, {"id": 3, "v": 30})], [(True, {"id": 3})]), rows


def test_each_table_s_rows_follow_its_create_table_and_an_empty_table_sends_one_too(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    """Like Debezium's snapshot schema changes: a consumer learns every captured table, also one without rows
    (the Spark pipeline creates its Delta table from it: MySQL has the empty table)."""
    mysql.execute("CREATE TABLE full_t (id int PRIMARY KEY, s varchar(5) DEFAULT 'x')",
                  "INSERT INTO full_t (id) VALUES (1)",
                  "CREATE TABLE empty_t (k bigint NOT NULL, UNIQUE KEY (k))", database=database)
    change_filter = ChangeFilter(TableFilter([f"{database}.*"]))
    source = CaptureSource(settings, options(snapshot_mode="initial_only", change_filter=change_filter))
    try:
        events = list(source.events())
    finally:
        source.close()
    seen = [(type(e).__name__, e.tables[0].table if isinstance(e, DDLEvent) else e.table.table)
            for e in events if isinstance(e, DDLEvent | RowChange)]
    assert seen == [("DDLEvent", "empty_t"), ("DDLEvent", "full_t"), ("RowChange", "full_t")]
    creates = [e for e in events if isinstance(e, DDLEvent)]
    assert {e.kind for e in creates} == {DDLKind.CREATE_TABLE}
    assert all(e.database == database and e.commit_ts == events[-1].checkpoint.commit_ts for e in creates)  # type: ignore[union-attr]
    assert creates[0].sql.startswith("CREATE TABLE `empty_t`") and "UNIQUE KEY `k` (`k`)" in creates[0].sql
    assert creates[1].schemas[0].column_names == ("id", "s")


def test_a_ddl_event_filter_drops_the_snapshot_s_create_table_but_not_the_rows(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1)", database=database)
    change_filter = ChangeFilter(TableFilter([f"{database}.*"]), (EventFilterRule(
        matcher=(f"{database}.*",), ignore_event=("create table",)),))
    source = CaptureSource(settings, options(snapshot_mode="initial_only", change_filter=change_filter))
    try:
        events = list(source.events())
    finally:
        source.close()
    assert [type(e).__name__ for e in events] == ["RowChange", "TransactionCommit"]
