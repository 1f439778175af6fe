"""A real canal-JSON consumer from another project reads our topic: Apache Flink's `canal-json`
format (flink-json from Maven Central, lakefeed_testing.flink_canal) decodes every message a
changefeed wrote from a real MariaDB through the bundled broker.

Flink's CanalJsonDeserializationSchema (flink-json 2.1.0) turns INSERT into +I, UPDATE into -U/+U
(filling the fields missing from a partial `old` from `data`), DELETE into -D, skips `CREATE`, and
refuses every other type unless `canal-json.ignore-parse-errors` is on, which then skips it.
"""

import datetime
import uuid
from pathlib import Path

import orjson
import pytest

from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from lakefeed_testing.flink_canal import decode
from lakefeed_testing.own_broker import OwnBroker
from tests.changefeed.conftest import options
from tests.changefeed.consume import Record, read_topic

ROW_TYPE = ("ROW<`id` INT, `name` STRING, `amount` DECIMAL(10, 2), `big` DECIMAL(20, 0), `at` TIMESTAMP(3), "
            "`day` DATE, `ratio` DOUBLE, `stored` INT>")
WORKLOAD = [
    "INSERT INTO t (id, name, amount, big, at, day, ratio) VALUES "
    "(1, 'a<b>&c', 12.50, 18446744073709551615, '2024-02-29 23:59:58.125', '2024-02-29', 0.1)",
    "INSERT INTO t (id, name, amount, big, at, day, ratio) VALUES (2, 'zoë\u2028', NULL, 0, NULL, NULL, -1.5)",
    "UPDATE t SET name = 'renamed', ratio = 2.25 WHERE id = 1",
    "UPDATE t SET amount = 3.00 WHERE id = 2",
    "ALTER TABLE t ADD INDEX by_name (name)",
    "DELETE FROM t WHERE id = 2",
]


def _run_feed(settings: ConnectionSettings, database: str, own_broker: OwnBroker, tmp_path: Path,
              start: Checkpoint, target: Checkpoint, **params: object) -> tuple[list[Record], int]:
    topic = f"flink-{uuid.uuid4().hex[:8]}"
    feed = Changefeed(ChangefeedSpec(
        f"feed-{topic}", settings, own_broker.uri(topic, partition_num=1, **params),
        capture=options(change_filter=ChangeFilter(TableFilter([f"{database}.*"])), blocking=True),
        start=start, target=target.position, checkpoint_store_url=f"sqlite:///{tmp_path / topic}.db",
    ))
    feed.create()
    feed.start()
    assert feed.wait(60) and feed.state == "finished", feed.error
    return read_topic(own_broker.bootstrap, topic, 1, expected=feed.rows + 2), feed.rows


def _mysql_rows(mysql: MySQLServer, database: str) -> dict[str, tuple[str | None, ...]]:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT CAST(id AS CHAR), name, CAST(amount AS CHAR), CAST(big AS CHAR), "
                    "DATE_FORMAT(at, '%Y-%m-%dT%H:%i:%s.%f'), CAST(day AS CHAR), CAST(ratio AS CHAR), "
                    "CAST(stored AS CHAR) FROM t")
        return {row[0]: tuple(row) for row in cur.fetchall()}


def _flink_text(values: tuple[str | None, ...]) -> tuple[str | None, ...]:
    """Flink's internal values as MySQL prints them: TIMESTAMP(3) 2024-02-29T23:59:58.125 (MySQL's %f
    has six digits), DATE as days since 1970-01-01."""
    at, day = values[4], values[5]
    return (*values[:4], None if at is None else at + "000",
            None if day is None else str(datetime.date(1970, 1, 1) + datetime.timedelta(days=int(day))), *values[6:])


def test_flink_canal_json_decodes_every_message_type(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker, tmp_path: Path
) -> None:
    start = Checkpoint(start_position(settings), 0)
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), "
                  "big BIGINT UNSIGNED, at DATETIME(3), day DATE, ratio DOUBLE, "
                  "doubled DOUBLE AS (ratio * 2) VIRTUAL, stored INT AS (id * 7) STORED)", database=database)
    for sql in WORKLOAD:
        mysql.execute(sql, database=database)
    target = Checkpoint(start_position(settings), 0)

    full, rows = _run_feed(settings, database, own_broker, tmp_path, start, target)
    partial, _ = _run_feed(settings, database, own_broker, tmp_path, start, target,
                           **{"only-output-updated-columns": "true"})
    assert rows == 5
    types = [r.message["type"] for r in full]
    assert types == ["CREATE", "INSERT", "INSERT", "UPDATE", "UPDATE", "CINDEX", "DELETE"]
    updates = [r.message for r in partial if r.message["type"] == "UPDATE"]
    assert [u["old"] for u in updates] == [[{"name": "a<b>&c", "ratio": "0.1"}], [{"amount": None}]]
    assert b"\\u003cb\\u003e\\u0026c" in full[1].value  # Go's escapes, which Flink's Jackson reads back

    strict = decode([r.value for r in full], ROW_TYPE)
    assert strict[0].rows == () and strict[0].error == ""  # CREATE: skipped by Flink itself
    assert strict[5].rows == () and 'Unknown "type" value "CINDEX"' in strict[5].error  # other DDL: refused
    assert [d.error for i, d in enumerate(strict) if i not in (0, 5)] == [""] * 5

    kinds = [[kind for kind, _ in d.rows] for d in strict]
    assert kinds == [[], ["+I"], ["+I"], ["-U", "+U"], ["-U", "+U"], [], ["-D"]]
    first = strict[1].rows[0][1]
    assert _flink_text(first) == ("1", "a<b>&c", "12.50", "18446744073709551615", "2024-02-29T23:59:58.125000",
                                  "2024-02-29", "0.1", "7")
    assert strict[2].rows[0][1][1] == "zoë\u2028"
    assert strict[3].rows[0][1][1:2] == ("a<b>&c",) and strict[3].rows[1][1][1] == "renamed"

    # With ignore-parse-errors (how Flink users read TiCDC topics) every DDL is skipped, and the
    # updated-columns-only topic gives Flink exactly the changelog of the full-old topic.
    lenient_full = decode([r.value for r in full], ROW_TYPE, ignore_parse_errors=True)
    lenient_partial = decode([r.value for r in partial], ROW_TYPE, ignore_parse_errors=True)
    assert all(d.error == "" for d in lenient_full + lenient_partial)
    changelog = [row for d in lenient_full for row in d.rows]
    assert [row for d in lenient_partial for row in d.rows] == changelog
    assert changelog == [row for d in strict for row in d.rows]

    state: dict[str, tuple[str | None, ...]] = {}
    for kind, values in changelog:
        if kind in ("+I", "+U"):
            state[str(values[0])] = values
        else:
            assert state.pop(str(values[0])) == values, "Flink's before-image differs from the row it replaces"
    assert {k: _flink_text(v) for k, v in state.items()} == _mysql_rows(mysql, database)


@pytest.mark.parametrize("updated_only", [False, True])
def test_flink_reads_golden_update_messages(updated_only: bool) -> None:
    """Without services: an UPDATE with a full and with a partial `old` (TiCDC's only-output-updated-columns)."""
    old = {"id": "1", "name": "a", "n": "5"} if not updated_only else {"name": "a"}
    message = {"id": 0, "database": "s", "table": "t", "pkNames": ["id"], "isDdl": False, "type": "UPDATE",
               "es": 1, "ts": 2, "sql": "", "sqlType": {"id": 4, "name": 12, "n": 4},
               "mysqlType": {"id": "int", "name": "varchar", "n": "int"}, "old": [old],
               "data": [{"id": "1", "name": "b", "n": "5"}]}
    [decoded] = decode([orjson.dumps(message)], "ROW<`id` INT, `name` STRING, `n` INT>")
    assert decoded.rows == (("-U", ("1", "a", "5")), ("+U", ("1", "b", "5")))
