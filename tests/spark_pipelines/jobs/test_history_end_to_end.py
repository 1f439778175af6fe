"""SCD type 2: every version of every row with valid-from/valid-to commit times; the open versions equal
the MySQL table; replaying the topic adds no version."""

import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from changefeed.model import Checkpoint
from changefeed.source.capture import start_position
from lakefeed_testing import KafkaReference, MySQLServer
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.history import VALID_TO, current_rows
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from tests.spark_pipelines.jobs.flow import PIPELINE_PARAMS, deliver, run_once, settings_of


def test_history_table_keeps_every_version(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    settings = settings_of(mysql)
    start = Checkpoint(start_position(settings), 0)
    mysql.execute("CREATE TABLE h (id INT PRIMARY KEY, v VARCHAR(10))", database=database)
    for statement in ("INSERT INTO h VALUES (1, 'a'), (2, 'x'), (3, 'p')", "UPDATE h SET v = 'b' WHERE id = 1",
                      "UPDATE h SET v = 'c' WHERE id = 1", "DELETE FROM h WHERE id = 2",
                      "UPDATE h SET id = 30 WHERE id = 3"):
        mysql.execute(statement, database=database)
    topic = f"scd2-{uuid.uuid4().hex[:8]}"
    uri = f"kafka://{kafka.bootstrap_servers}/{topic}?partition-num=2&{PIPELINE_PARAMS}"
    deliver(settings, database, uri, start)

    source = SourceConfig(kafka.bootstrap_servers, (topic,))
    config = PipelineConfig(source, str(tmp_path / "delta"), str(tmp_path / "ckpt-1"), scd_type=2)
    run_once(spark, config)
    path = config.table_path(database, "h")
    assert {tuple(r) for r in current_rows(spark, path).collect()} == {(1, "c"), (30, "p")}

    history = spark.read.format("delta").load(path).orderBy("id", SEQ)  # commit times may tie within a second
    versions = [(r["id"], r["v"], r[VALID_TO] is None) for r in history.collect()]
    assert versions == [(1, "a", False), (1, "b", False), (1, "c", True), (2, "x", False), (3, "p", False),
                        (30, "p", True)]
    # Each closed version ends exactly when the key's next version starts.
    ones = history.where(F.col("id") == 1).collect()
    assert [r[VALID_TO] for r in ones[:-1]] == [r[COMMIT_TS] for r in ones[1:]]

    replay = PipelineConfig(source, config.target_path, str(tmp_path / "ckpt-2"), scd_type=2)
    run_once(spark, replay)
    assert spark.read.format("delta").load(path).count() == len(versions)
