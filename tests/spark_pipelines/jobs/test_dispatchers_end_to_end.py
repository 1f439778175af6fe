"""Under every dispatcher (default, index-value, table, columns, ts) the Delta table ends equal to its
MySQL table: one changefeed routes each table to its own topic with its own partition strategy, one
streaming job reads all five topics by pattern. The `columns` strategy hashes a non-key column that the
workload changes, so one key's changes land on different partitions."""

import uuid
from pathlib import Path
from typing import Any

from changefeed.dispatch.router import DispatchRule
from changefeed.model import Checkpoint
from changefeed.source.capture import start_position
from lakefeed_testing import KafkaReference, MySQLServer
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows
from tests.spark_pipelines.jobs.flow import PIPELINE_PARAMS, deliver, run_once, settings_of


def _workload(mysql: MySQLServer, database: str, table: str) -> None:
    mysql.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, u INT NOT NULL UNIQUE, grp INT, v VARCHAR(20))",
                  database=database)
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)",
                        [(i, 1000 + i, i % 5, f"v{i}") for i in range(120)])
        conn.commit()
        for round_ in range(3):
            cur.execute(f"UPDATE {table} SET grp = grp + 1, v = %s WHERE MOD(id, 3) = 0", (f"r{round_}",))
            conn.commit()
        cur.execute(f"UPDATE {table} SET id = id + 500 WHERE id % 11 = 0")  # key-changing
        cur.execute(f"DELETE FROM {table} WHERE id % 10 = 1")
        conn.commit()


def test_every_dispatcher_keeps_delta_equal_to_mysql(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    settings = settings_of(mysql)
    start = Checkpoint(start_position(settings), 0)
    prefix = f"disp-{uuid.uuid4().hex[:6]}"
    rules = {
        "t_default": DispatchRule((f"{database}.t_default",), "default", f"{prefix}-default"),
        "t_index": DispatchRule((f"{database}.t_index",), "index-value", f"{prefix}-index", index=("u",)),
        "t_table": DispatchRule((f"{database}.t_table",), "table", f"{prefix}-table"),
        "t_columns": DispatchRule((f"{database}.t_columns",), "columns", f"{prefix}-columns", columns=("grp",)),
        "t_ts": DispatchRule((f"{database}.t_ts",), "ts", f"{prefix}-ts"),
    }
    for table in rules:
        _workload(mysql, database, table)
    uri = f"kafka://{kafka.bootstrap_servers}/{prefix}-rest?partition-num=3&{PIPELINE_PARAMS}"
    deliver(settings, database, uri, start, rules=tuple(rules.values()))

    config = PipelineConfig(SourceConfig(kafka.bootstrap_servers, topic_pattern=f"{prefix}-.*"),
                            str(tmp_path / "delta"), str(tmp_path / "checkpoint"))
    run_once(spark, config)

    for table in rules:
        with mysql.connect(database) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            expected = {tuple(row) for row in cur.fetchall()}
        got = {tuple(row) for row in live_rows(spark, config.table_path(database, table)).collect()}
        assert got == expected, (rules[table].partition, sorted(got ^ expected)[:5])
