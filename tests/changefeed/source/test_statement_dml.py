"""DML logged as a statement (binlog_format STATEMENT/MIXED, even in one session) stops the capture
with a message naming the table, the statement and the fix; the checkpoint never passes it.
Heartbeats of an idle source move the checkpoint to the server's binlog end."""

import threading
import time

import pytest

from changefeed.errors import ServerConfigError
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import CaptureEvent, Checkpoint, Position, RowChange, TransactionCommit, tso_physical_ms
from changefeed.source.capture import CaptureSource, start_position
from changefeed.source.server import ConnectionSettings
from changefeed.source.statement_dml import StatementDML, classify_dml
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import options


@pytest.mark.parametrize(("sql", "verb", "tables"), [
    ("INSERT INTO t (a) VALUES (1)", "INSERT", ["d.t"]),
    ("insert ignore into shop.t select * from u", "INSERT", ["shop.t"]),
    ("REPLACE LOW_PRIORITY INTO db.t SET a=1", "REPLACE", ["db.t"]),
    ("UPDATE LOW_PRIORITY IGNORE t SET a = 1 ORDER BY a LIMIT 2", "UPDATE", ["d.t"]),
    ("UPDATE t, db2.u SET t.a=1, u.b=2", "UPDATE", ["d.t", "db2.u"]),
    ("DELETE QUICK FROM t WHERE a=1 LIMIT 3", "DELETE", ["d.t"]),
    ("DELETE x FROM db.t AS x JOIN u ON x.a = u.a", "DELETE", ["db.t"]),
    ("DELETE FROM t1, t2 USING t1 JOIN t2 JOIN t3", "DELETE", ["d.t1", "d.t2"]),
    ("WITH c AS (SELECT 1) UPDATE t SET a = 1", "UPDATE", ["d.t"]),
    ("LOAD DATA INFILE '/tmp/SQL_LOAD-1-2-3.data' INTO TABLE `t` FIELDS TERMINATED BY ','", "LOAD DATA", ["d.t"]),
    ("/* app */ INSERT INTO `we``ird` VALUES (1)", "INSERT", ["d.we`ird"]),
])
def test_dml_statements_and_their_tables(sql: str, verb: str, tables: list[str]) -> None:
    statement = classify_dml(sql, "d")
    assert statement is not None and statement.verb == verb
    assert [str(t) for t in statement.tables or ()] == tables


@pytest.mark.parametrize("sql", ["BEGIN", "COMMIT", "SAVEPOINT s1", "ROLLBACK TO s1", "XA START 'x'",
                                 "CREATE TABLE t (a int)", "GRANT SELECT ON *.* TO u", "FLUSH PRIVILEGES",
                                 "DROP TEMPORARY TABLE IF EXISTS `t`", "TRUNCATE t", "ANALYZE TABLE t"])
def test_other_statements_are_not_dml(sql: str) -> None:
    assert classify_dml(sql, "d") is None


def test_unparsable_dml_is_dml_with_unknown_tables() -> None:
    assert classify_dml("INSERT INTO t VALUES ('unterminated", "d") == StatementDML("INSERT", None)


def _run(settings: ConnectionSettings, start: Checkpoint, database: str) -> tuple[list[CaptureEvent], BaseException]:
    flt = ChangeFilter(TableFilter([f"{database}.*", f"!{database}.skip"]))
    source = CaptureSource(settings, options(change_filter=flt), start=start)
    events: list[CaptureEvent] = []
    try:
        for event in source.events():
            events.append(event)
    except ServerConfigError as exc:
        return events, exc
    finally:
        source.close()
    raise AssertionError(f"capture ended without an error after {len(events)} events")


@pytest.mark.parametrize(("fmt", "statement"), [
    ("STATEMENT", "INSERT INTO t VALUES (2, 'b')"),
    ("STATEMENT", "UPDATE t SET v = 'z' WHERE id = 1"),
    ("MIXED", "DELETE FROM t WHERE id = 1"),
    ("MIXED", "REPLACE INTO t VALUES (1, 'r')"),
])
def test_session_statement_format_stops_capture_before_the_statement(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, fmt: str, statement: str
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", "CREATE TABLE skip (id INT PRIMARY KEY)",
                  database=database)
    start = Checkpoint(start_position(settings), 0)
    mysql.execute("INSERT INTO t VALUES (1, 'a')", database=database)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute(f"SET SESSION binlog_format={fmt}")
        cur.execute("INSERT INTO skip VALUES (1)")  # not captured: no reason to stop
        cur.execute(statement)
        cur.execute("SHOW MASTER STATUS")
        after = cur.fetchone()
    mysql.execute("INSERT INTO t VALUES (3, 'c')", database=database)

    events, error = _run(settings, start, database)
    message = str(error)
    assert f"{database}.t" in message and statement.split()[0] in message and "binlog_format=ROW" in message
    assert "skip" not in message.split("'")[0]  # the uncaptured table is not blamed
    assert [e.after["id"] for e in events if isinstance(e, RowChange)] == [1]  # type: ignore[index]
    last = [e for e in events if isinstance(e, TransactionCommit)][-1].checkpoint.position
    assert last.sort_key < Position(str(after[0]), int(after[1])).sort_key


def test_heartbeat_moves_the_checkpoint_of_an_idle_source(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=database)
    start = Checkpoint(start_position(settings), 0)
    mysql.execute("CREATE TABLE other (id INT PRIMARY KEY)", "INSERT INTO other VALUES (1)", database=database)
    here = start_position(settings)
    stop = threading.Event()
    flt = ChangeFilter(TableFilter([f"{database}.t"]))
    source = CaptureSource(settings, options(change_filter=flt, blocking=True), start=start, stop=stop)
    commits: list[tuple[float, TransactionCommit]] = []

    def consume() -> None:
        for event in source.events():
            if isinstance(event, TransactionCommit):
                commits.append((time.time(), event))

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    try:
        time.sleep(4.0)  # idle: only heartbeats arrive
    finally:
        stop.set()
        thread.join(10)
        source.close()
    assert commits, "no checkpoint at all while idle"
    received, last = commits[-1]
    latest = last.checkpoint
    assert latest.position.sort_key >= here.sort_key, (latest.position, here)
    assert received > time.time() - 2.0, "the checkpoint stopped moving while idle"
    lag = received - tso_physical_ms(latest.commit_ts) / 1000
    assert lag < 3.0, f"checkpoint lag {lag:.1f} s on an idle source"
