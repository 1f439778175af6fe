"""End to end: a workload in MariaDB (inserts, updates, deletes, key-changing updates, ADD, RENAME and
DROP COLUMN, TRUNCATE, RENAME TABLE) -> changefeed -> Apache Kafka -> the streaming job (availableNow) -> Delta tables
equal to the MySQL tables, values, columns and types. A second run on the same checkpoint picks up only
what is new; replaying every offset from a new checkpoint changes nothing; a query stopped mid-stream
and started again (small micro-batches) converges to the same tables."""

import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from changefeed.model import Checkpoint
from changefeed.source.capture import start_position
from lakefeed_testing import KafkaReference, MySQLServer
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import exists, live_rows
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import start_query
from tests.spark_pipelines.jobs.flow import PIPELINE_PARAMS, deliver, run_once, settings_of


def _workload_part_one(mysql: MySQLServer, database: str) -> None:
    mysql.execute(
        "CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(40) NOT NULL, n BIGINT, amount DECIMAL(10,2))",
        "CREATE TABLE logs (id BIGINT PRIMARY KEY, msg VARCHAR(100))",
        database=database,
    )
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO acct VALUES (%s, %s, %s, %s)",
                        [(i, f"o-{i}", i * 3, Decimal(i) / 4) for i in range(200)])
        cur.executemany("INSERT INTO logs VALUES (%s, %s)", [(i, f"log {i}") for i in range(50)])
        conn.commit()
        cur.execute("UPDATE acct SET n = n + 1, amount = amount * 2 WHERE id % 3 = 0")
        cur.execute("DELETE FROM acct WHERE id % 7 = 0")
        cur.execute("UPDATE acct SET id = id + 1000 WHERE id BETWEEN 10 AND 19")  # key-changing updates
        cur.execute("UPDATE acct SET owner = 'twice-1' WHERE id = 1")
        cur.execute("UPDATE acct SET owner = 'twice-2' WHERE id = 1")  # same key twice in one transaction
        conn.commit()
        cur.execute("TRUNCATE TABLE logs")
        cur.executemany("INSERT INTO logs VALUES (%s, %s)", [(i, f"after truncate {i}") for i in range(40, 60)])
        conn.commit()


def _workload_part_two(mysql: MySQLServer, database: str) -> None:
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.execute("ALTER TABLE acct ADD COLUMN note VARCHAR(20)")
        cur.executemany("INSERT INTO acct VALUES (%s, %s, %s, %s, %s)",
                        [(i, f"o-{i}", None, Decimal("1.50"), f"n{i}") for i in range(5000, 5050)])
        cur.execute("UPDATE acct SET note = 'old row' WHERE id < 50")
        cur.execute("DELETE FROM logs WHERE id < 45")
        conn.commit()
        cur.execute("UPDATE acct SET owner = 'before rename' WHERE id = 2")
        conn.commit()
        cur.execute("ALTER TABLE acct RENAME COLUMN owner TO holder")
        cur.execute("UPDATE acct SET holder = 'after rename' WHERE id = 3")
        conn.commit()
        cur.execute("ALTER TABLE acct DROP COLUMN n")
        cur.execute("INSERT INTO acct VALUES (6000, 'after drop', 9.99, 'x')")
        conn.commit()
        cur.execute("RENAME TABLE logs TO events")  # the rows follow the table to its new name
        cur.execute("UPDATE events SET msg = 'renamed' WHERE id % 2 = 0")
        cur.execute("INSERT INTO events VALUES (100, 'after rename')")
        conn.commit()


def _mysql_rows(mysql: MySQLServer, database: str, table: str) -> tuple[list[str], set[tuple[Any, ...]]]:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        return [d[0] for d in cur.description], {tuple(r) for r in cur.fetchall()}


def _assert_delta_equals_mysql(spark: Any, mysql: MySQLServer, database: str, config: PipelineConfig) -> None:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SHOW TABLES")
        tables = sorted(row[0] for row in cur.fetchall())
    for gone in {"logs", "events"} - set(tables):  # renamed away (or not yet there)
        path = config.table_path(database, gone)
        assert not exists(spark, path) or live_rows(spark, path).count() == 0, gone
    for table in tables:
        columns, expected = _mysql_rows(mysql, database, table)
        delta = live_rows(spark, config.table_path(database, table))
        assert delta.columns == columns, (table, delta.columns)
        got = {tuple(row) for row in delta.collect()}
        assert got == expected, (table, sorted(got ^ expected)[:5])


def test_workload_to_delta_equals_mysql_and_replay_changes_nothing(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    settings = settings_of(mysql)
    topic = f"e2e-{uuid.uuid4().hex[:8]}"
    uri = f"kafka://{kafka.bootstrap_servers}/{topic}?partition-num=3&{PIPELINE_PARAMS}"
    start = Checkpoint(start_position(settings), 0)
    store = tmp_path / "changefeed.db"
    source = SourceConfig(kafka.bootstrap_servers, (topic,))
    config = PipelineConfig(source, str(tmp_path / "delta"), str(tmp_path / "checkpoint-1"))

    _workload_part_one(mysql, database)
    deliver(settings, database, uri, start, store=store)
    run_once(spark, config)
    _assert_delta_equals_mysql(spark, mysql, database, config)

    # More changes, including a new column: the same checkpoint applies only the new records.
    _workload_part_two(mysql, database)
    deliver(settings, database, uri, start, store=store)
    run_once(spark, config)
    _assert_delta_equals_mysql(spark, mysql, database, config)

    # Replaying every offset from a new checkpoint into the same tables changes nothing.
    replay = PipelineConfig(source, config.target_path, str(tmp_path / "checkpoint-2"))
    run_once(spark, replay)
    _assert_delta_equals_mysql(spark, mysql, database, config)

    # Stopped mid-stream, then started again on its checkpoint: the same tables in the end.
    small = PipelineConfig(SourceConfig(kafka.bootstrap_servers, (topic,), max_offsets_per_trigger=150),
                           str(tmp_path / "delta-2"), str(tmp_path / "checkpoint-3"))
    query = start_query(spark, read_stream(spark, small.source), small)
    deadline = time.monotonic() + 120
    while (query.lastProgress or {}).get("batchId", -1) < 1 and query.isActive:
        assert time.monotonic() < deadline, "no micro-batch finished"
        time.sleep(0.2)
    query.stop()
    run_once(spark, small)
    _assert_delta_equals_mysql(spark, mysql, database, small)
