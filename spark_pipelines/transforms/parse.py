"""Kafka records -> one row per canal-JSON message, with its commit sequence.

The commit sequence `_lakefeed_seq` is a struct (ts, partition, offset) compared field by field:
- `ts` is `_tidb.commitTs` when the message has it, else `es << 18`, so both live on the TSO scale
  (`physical_ms << 18 | logical`) and a stream may mix them;
- `partition` breaks ties between partitions deterministically (the changefeed sends all changes of
  one key to one partition, so ties across partitions never concern the same key);
- `offset` orders several changes of one key inside one transaction (same commit ts): the changefeed
  writes them to the key's partition in commit order.
Replaying a record yields the same sequence, so a MERGE that only applies strictly newer sequences
ignores it.
"""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_pipelines.schemas import CANAL_JSON_SCHEMA

DML_TYPES = ("INSERT", "UPDATE", "DELETE")
# The changefeed's message key (changefeed/codec/canal_json.py row_key): {"database", "table", "key": {column: text}}.
MESSAGE_KEY_SCHEMA = "struct<key: map<string, string>>"
WATERMARK_TYPE = "TIDB_WATERMARK"
SEQ = "_lakefeed_seq"
COMMIT_TS = "_lakefeed_commit_ts"
TSO_PHYSICAL_SHIFT = 18


def sequence(commit_ts: Column, es: Column, partition: Column, offset: Column) -> Column:
    ts = F.coalesce(commit_ts, F.shiftleft(es, TSO_PHYSICAL_SHIFT))
    return F.struct(ts.alias("ts"), partition.cast("int").alias("partition"),
                    offset.cast("long").alias("offset"))


def parse_messages(records: DataFrame) -> DataFrame:
    """Kafka source rows (topic, partition, offset, key, value) -> parsed messages.

    Columns: topic, partition, offset, value (the raw text, kept so a bad message can be named),
    valid, database, table, type, is_ddl, sql, pk_names, key_names (the columns of the
    changefeed's message key: its handle key), mysql_types, row, old, es, session_time_zone (the DDL
    session's time zone, when the statement used it), only_handle_key,
    _lakefeed_seq,
    _lakefeed_commit_ts. `valid` is false for text that is not a canal-JSON message; watermarks are
    dropped.
    """
    text = F.col("value").cast("string")
    key = F.col("key").cast("string")
    parsed = records.select(
        "topic", "partition", "offset", text.alias("value"),
        F.from_json(text, CANAL_JSON_SCHEMA, {"mode": "PERMISSIVE"}).alias("m"),
        F.from_json(key, MESSAGE_KEY_SCHEMA).alias("k"),
    )
    physical_ms = F.coalesce(
        F.shiftright(F.col("m._tidb.commitTs"), TSO_PHYSICAL_SHIFT), F.col("m.es"))
    out = parsed.select(
        "topic", "partition", "offset", "value",
        F.col("m.database").alias("database"),
        F.col("m.table").alias("table"),
        F.upper(F.col("m.type")).alias("type"),
        F.coalesce(F.col("m.isDdl"), F.lit(False)).alias("is_ddl"),
        F.col("m.sql").alias("sql"),
        F.col("m.pkNames").alias("pk_names"),
        F.map_keys(F.col("k.key")).alias("key_names"),
        F.col("m.mysqlType").alias("mysql_types"),
        F.col("m.data")[0].alias("row"),
        F.col("m.old")[0].alias("old"),
        F.col("m.es").alias("es"),
        F.col("m._tidb.sessionTimeZone").alias("session_time_zone"),
        F.coalesce(F.col("m._tidb.onlyHandleKey"), F.lit(False)).alias("only_handle_key"),
        sequence(F.col("m._tidb.commitTs"), F.col("m.es"), F.col("partition"), F.col("offset")).alias(SEQ),
        F.timestamp_millis(physical_ms).alias(COMMIT_TS),
    )
    valid = (
        F.col("type").isNotNull() & F.col("database").isNotNull() & F.col(f"{SEQ}.ts").isNotNull()
        & (F.col("is_ddl") | (F.col("type").isin(*DML_TYPES) & F.col("table").isNotNull()
                              & F.col("row").isNotNull() & F.col("mysql_types").isNotNull()))
        # A handle-key-only row (TiCDC's large-message handling) lacks the other columns; applying
        # it would null them, so only deletes may come that way.
        & (~F.col("only_handle_key") | (F.col("type") == "DELETE"))
    )
    return (out.withColumn("valid", F.coalesce(valid, F.lit(False)))
            .where(F.coalesce(F.col("type"), F.lit("")) != WATERMARK_TYPE))
