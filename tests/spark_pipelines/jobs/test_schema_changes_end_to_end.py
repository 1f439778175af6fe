"""Schema changes applied as MySQL applies them, end to end: real MariaDB -> changefeed -> Apache Kafka ->
the streaming job -> Delta, compared with what MariaDB itself returns after the DDL (column names, order,
values). Each workload runs in one micro-batch, so rows before and after each DDL meet in one batch; a
replay of every offset from a new checkpoint leaves the tables equal.

Regression tests for issue 16 ([equality]): an added column's DEFAULT in existing rows, column positions
(ADD ... AFTER/FIRST, MODIFY/CHANGE ... AFTER/FIRST) and a type change between rows of one batch."""

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from changefeed.model import Checkpoint
from changefeed.source.capture import start_position
from lakefeed_testing import KafkaReference, MySQLServer
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows
from tests.spark_pipelines.jobs.flow import PIPELINE_PARAMS, deliver, run_once, settings_of


def _through_pipeline(mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path,
                      statements: list[str]) -> PipelineConfig:
    settings = settings_of(mysql)
    start = Checkpoint(start_position(settings), 0)
    mysql.execute(*statements, database=database)
    topic = f"ddl-{uuid.uuid4().hex[:8]}"
    deliver(settings, database, f"kafka://{kafka.bootstrap_servers}/{topic}?partition-num=2&{PIPELINE_PARAMS}",
            start)
    config = PipelineConfig(SourceConfig(kafka.bootstrap_servers, (topic,)), str(tmp_path / "delta"),
                            str(tmp_path / "checkpoint"))
    run_once(spark, config)
    return config




def _assert_equal(mysql: MySQLServer, database: str, spark: Any, config: PipelineConfig, table: str) -> None:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")  # TIMESTAMP as UTC wall time, as Spark hands it back
        cur.execute(f"SELECT * FROM {table}")
        columns = [d[0] for d in cur.description]
        expected = {tuple(row) for row in cur.fetchall()}
    delta = live_rows(spark, config.table_path(database, table))
    assert delta.columns == columns, (table, delta.columns, columns)
    got = {tuple(row) for row in delta.collect()}
    assert got == expected, (table, sorted(got - expected, key=str)[:5], sorted(expected - got, key=str)[:5])


def _assert_equal_also_after_replay(mysql: MySQLServer, database: str, spark: Any, config: PipelineConfig,
                                    tmp_path: Path, table: str) -> None:
    """Equal, then equal again after every offset is replayed from a new checkpoint into the same tables:
    the DDL applies again, over rows that already hold their later values."""
    _assert_equal(mysql, database, spark, config, table)
    run_once(spark, PipelineConfig(config.source, config.target_path, str(tmp_path / "checkpoint-replay")))
    _assert_equal(mysql, database, spark, config, table)


def test_added_columns_take_their_default_in_existing_rows(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    config = _through_pipeline(mysql, database, kafka, spark, tmp_path, [
        "CREATE TABLE t (id INT PRIMARY KEY, a INT)",
        "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)",
        "DELETE FROM t WHERE id = 3",
        "ALTER TABLE t ADD COLUMN s VARCHAR(12) NOT NULL DEFAULT 'new'",
        # No DEFAULT: NULL, or NOT NULL's implicit default (0, '', the first ENUM member).
        "ALTER TABLE t ADD COLUMN n INT NOT NULL, ADD COLUMN e ENUM('x','y') NOT NULL, ADD c CHAR(3) NOT NULL, "
        "ADD COLUMN z INT",
        "ALTER TABLE t ADD COLUMN d DECIMAL(6,2) DEFAULT '1.5', ADD COLUMN ts TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP",
        "INSERT INTO t (id, a, s, n, e, c) VALUES (4, 40, 'later', 5, 'y', 'abc')",
        "UPDATE t SET a = 11, s = 'mine' WHERE id = 1",
    ])
    _assert_equal_also_after_replay(mysql, database, spark, config, tmp_path, "t")
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT s, n, e, d FROM t WHERE id = 2")
        assert cur.fetchone() == ("new", 0, "x", Decimal("1.50"))  # the test compares defaults, not NULLs


def test_columns_keep_the_position_mysql_gives_them(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    config = _through_pipeline(mysql, database, kafka, spark, tmp_path, [
        "CREATE TABLE p (id INT PRIMARY KEY, a INT, b VARCHAR(5))",
        "INSERT INTO p VALUES (1, 1, 'one'), (2, 2, 'two')",
        "ALTER TABLE p ADD COLUMN c INT DEFAULT 7 AFTER id",  # id, c, a, b
        "ALTER TABLE p ADD COLUMN z VARCHAR(3) FIRST",  # z, id, c, a, b
        "INSERT INTO p VALUES ('z3', 3, 33, 3, 'three')",
        "ALTER TABLE p MODIFY b VARCHAR(5) AFTER z",  # z, b, id, c, a
        "ALTER TABLE p CHANGE a a2 BIGINT FIRST",  # a2, z, b, id, c
        "INSERT INTO p VALUES (4, 'z4', 'four', 4, 44)",
    ])
    _assert_equal_also_after_replay(mysql, database, spark, config, tmp_path, "p")


def test_a_type_change_between_rows_of_one_batch_converts_as_mysql(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    config = _through_pipeline(mysql, database, kafka, spark, tmp_path, [
        "CREATE TABLE f (id INT PRIMARY KEY, f FLOAT, d DECIMAL(10,4))",
        "INSERT INTO f VALUES (1, 3.14159, 1.2345), (2, -2.5, -0.0051)",
        "ALTER TABLE f MODIFY f DOUBLE",  # the float's value, widened: 3.141590118408203
        "ALTER TABLE f MODIFY d DECIMAL(8,2)",  # rounded half away from zero: 1.23, -0.01
        "INSERT INTO f VALUES (3, 2.718281828459045, 9.99)",
    ])
    _assert_equal_also_after_replay(mysql, database, spark, config, tmp_path, "f")
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT f FROM f WHERE id = 1")
        assert cur.fetchone() == (3.141590118408203,)


def test_current_timestamp_and_timestamp_literals_are_read_in_the_ddl_sessions_zone(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    """MySQL fills existing rows of an added `DATETIME DEFAULT CURRENT_TIMESTAMP` with the DDL's time in the
    session's zone, and reads a TIMESTAMP literal in it (the equality long run, seed 19, found the first:
    8 hours off). The binlog says which zone; the changefeed sends it as `_tidb.sessionTimeZone`."""
    config = _through_pipeline(mysql, database, kafka, spark, tmp_path, [
        "CREATE TABLE w (id INT PRIMARY KEY, a INT)",
        "INSERT INTO w VALUES (1, 1), (2, 2)",
        "SET time_zone = '-8:00'",
        "ALTER TABLE w ADD COLUMN added DATETIME DEFAULT CURRENT_TIMESTAMP",
        "SET time_zone = '+05:30'",
        "ALTER TABLE w ADD COLUMN since TIMESTAMP NULL DEFAULT '2024-01-01 00:00:00'",
        "INSERT INTO w (id, a) VALUES (3, 3)",
    ])
    _assert_equal_also_after_replay(mysql, database, spark, config, tmp_path, "w")
