"""The Spark fixture: Delta jars are loaded and Delta write, MERGE and read work."""

from pathlib import Path
from typing import Any

from delta.tables import DeltaTable
from pyspark.testing import assertDataFrameEqual


def test_delta_write_merge_read(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "users")
    spark.createDataFrame([(1, "ann", 10), (2, "bob", 20)], "id INT, name STRING, score INT") \
        .write.format("delta").save(path)

    changes = spark.createDataFrame(
        [(2, "bob", 25, "U"), (1, None, None, "D"), (3, "cid", 30, "I")],
        "id INT, name STRING, score INT, op STRING",
    )
    (
        DeltaTable.forPath(spark, path).alias("t")
        .merge(changes.alias("c"), "t.id = c.id")
        .whenMatchedDelete(condition="c.op = 'D'")
        .whenMatchedUpdate(set={"name": "c.name", "score": "c.score"})
        .whenNotMatchedInsert(condition="c.op != 'D'", values={"id": "c.id", "name": "c.name",
                                                               "score": "c.score"})
        .execute()
    )

    expected = spark.createDataFrame([(2, "bob", 25), (3, "cid", 30)], "id INT, name STRING, score INT")
    assertDataFrameEqual(spark.read.format("delta").load(path), expected)
    history = DeltaTable.forPath(spark, path).history().select("operation").collect()
    assert [row.operation for row in history] == ["MERGE", "WRITE"]
