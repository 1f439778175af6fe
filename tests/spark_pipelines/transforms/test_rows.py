"""changes_of: typed change rows per table; key-changing updates become delete + upsert."""

from typing import Any

from pyspark.testing import assertDataFrameEqual

from spark_pipelines.schemas import column_type
from spark_pipelines.transforms.parse import parse_messages
from spark_pipelines.transforms.rows import TableShape, changes_of
from tests.spark_pipelines.canal import dml, records

TYPES = {"id": "int", "name": "varchar(20)", "score": "decimal(5,2)"}
SHAPE = TableShape("shop", "users", tuple((n, column_type(t)) for n, t in TYPES.items()), ("id",))


def test_changes_are_typed_and_key_changes_split(spark: Any) -> None:
    values = [
        dml("users", "INSERT", {"id": "1", "name": "ann", "score": "1.50"}, types=TYPES),
        dml("users", "UPDATE", {"id": "2", "name": "ann", "score": "1.50"}, old={"id": "1"}, types=TYPES),
        dml("users", "UPDATE", {"id": "2", "name": "bea", "score": None},
            old={"name": "ann", "score": "1.50"}, types=TYPES),
        dml("users", "DELETE", {"id": "2", "name": "bea", "score": None}, types=TYPES),
        dml("other", "INSERT", {"id": "9", "name": "x", "score": "0"}, types=TYPES),
        dml("users", "INSERT", {"id": "3", "name": "cy", "score": "9.99"}, types=TYPES, database="elsewhere"),
    ]
    changes = changes_of(parse_messages(records(spark, values)), SHAPE).drop("_lakefeed_commit_ts")
    ts = 1_700_000_000_000 << 18
    expected = spark.createDataFrame([
        (1, "ann", "1.50", "U", (ts, 0, 0)),
        (2, "ann", "1.50", "U", (ts, 0, 1)),
        (1, "ann", "1.50", "D", (ts, 0, 1)),  # the key change removes id 1
        (2, "bea", None, "U", (ts, 0, 2)),
        (2, "bea", None, "D", (ts, 0, 3)),
    ], "id INT, name STRING, score STRING, _lakefeed_op STRING, "
       "_lakefeed_seq STRUCT<ts: BIGINT, partition: INT, offset: BIGINT>")
    assertDataFrameEqual(changes, expected.withColumn("score", expected["score"].cast("decimal(5,2)"))
                         .select(*changes.columns))
