"""latest_per_key: order per key by commit sequence, keep the newest change."""

from typing import Any

from pyspark.testing import assertDataFrameEqual

from spark_pipelines.transforms.latest import latest_per_key

SCHEMA = ("id INT, name STRING, _lakefeed_op STRING, "
          "_lakefeed_seq STRUCT<ts: BIGINT, partition: INT, offset: BIGINT>")


def test_newest_change_per_key_wins_whatever_the_arrival_order(spark: Any) -> None:
    changes = spark.createDataFrame([
        (1, "late-but-old", "U", (100, 0, 9)),   # arrived last, committed first
        (1, "newest", "U", (200, 0, 3)),
        (1, "older", "U", (150, 0, 5)),
        (2, "dup", "U", (300, 1, 4)),            # the same record read twice
        (2, "dup", "U", (300, 1, 4)),
        (3, "x", "U", (10, 0, 1)),
        (3, None, "D", (10, 0, 2)),              # same transaction: the later offset wins
        (4, "b", "U", (50, 0, 1)),
        (4, "a", "U", (50, 0, 0)),
    ], SCHEMA)
    expected = spark.createDataFrame([
        (1, "newest", "U", (200, 0, 3)), (2, "dup", "U", (300, 1, 4)), (3, None, "D", (10, 0, 2)),
        (4, "b", "U", (50, 0, 1)),
    ], SCHEMA)
    assertDataFrameEqual(latest_per_key(changes, ["id"]), expected)
