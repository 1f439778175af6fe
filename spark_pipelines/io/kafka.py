"""The Kafka edge: Spark's Kafka source over the changefeed's topics (bundled broker or Apache Kafka)."""

from typing import Any

from pyspark.sql import DataFrame

from spark_pipelines.config import SourceConfig


def read_stream(spark: Any, source: SourceConfig) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", source.bootstrap_servers)
        .option("startingOffsets", source.starting_offsets)
        # Retention may delete records the checkpoint still points at; losing changes silently would
        # leave Delta wrong, so the query stops instead.
        .option("failOnDataLoss", "true")
    )
    if source.topic_pattern:
        reader = reader.option("subscribePattern", source.topic_pattern)
    else:
        reader = reader.option("subscribe", ",".join(source.topics))
    frame: DataFrame = reader.load()
    return frame
