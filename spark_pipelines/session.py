"""The SparkSession the pipeline runs on.

Under `spark-submit` (a cluster) the session already exists with its packages; locally we build one
with Delta and Spark's Kafka source resolved from Maven Central into the persistent Ivy cache, the
same way the tests do (lakefeed_testing.spark holds the offline-friendly Ivy settings).
"""

from typing import Any


def get_or_build_session(app_name: str = "lakefeed-pipeline", master: str | None = None) -> Any:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from lakefeed_testing.spark import build_spark_session

    return build_spark_session(app_name, master or "local[2]")
