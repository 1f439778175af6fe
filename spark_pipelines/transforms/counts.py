"""What a micro-batch carried, for its progress line and metrics: row changes per table and the newest
commit time."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.transforms.parse import COMMIT_TS


def per_table(messages: DataFrame) -> DataFrame:
    """Parsed messages -> one row per (database, table, is_ddl): `rows` (messages) and `newest_ms` (the
    newest commit time, epoch milliseconds)."""
    return (messages.where(F.col("valid")).groupBy("database", "table", "is_ddl")
            .agg(F.count(F.lit(1)).alias("rows"), F.max(F.unix_millis(F.col(COMMIT_TS))).alias("newest_ms")))
