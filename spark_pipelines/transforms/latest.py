"""Order changes per key by commit sequence and keep the newest one per key."""

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_pipelines.transforms.parse import SEQ


def latest_per_key(changes: DataFrame, primary_key: Sequence[str]) -> DataFrame:
    """One row per key: the change with the greatest `_lakefeed_seq`. Exact duplicates (a record
    read twice) share a sequence; any of them is the same change, so ties keep one arbitrarily."""
    window = Window.partitionBy(*primary_key).orderBy(F.col(SEQ).desc())
    return (changes.withColumn("_lakefeed_rank", F.row_number().over(window))
            .where(F.col("_lakefeed_rank") == 1).drop("_lakefeed_rank"))
