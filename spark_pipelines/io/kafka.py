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
    # TLS, SASL and other client settings (`kafka.*`) and the source's own options, checked by config.py.
    for key, value in source.options:
        reader = reader.option(key, value)
    if source.max_offsets_per_trigger:
        # A batch may then end at different points of different partitions: jobs/ddl_hold.py keeps DDL in order.
        reader = reader.option("maxOffsetsPerTrigger", str(source.max_offsets_per_trigger))
    if source.topic_pattern:
        reader = reader.option("subscribePattern", source.topic_pattern)
    else:
        reader = reader.option("subscribe", ",".join(source.topics))
    frame: DataFrame = reader.load()
    return frame
