"""parse_messages: canal-JSON text -> columns and commit sequence."""

import datetime as dt
from typing import Any

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_pipelines.transforms.parse import parse_messages
from tests.spark_pipelines.canal import ddl, dml, records

ES = 1_700_000_000_000
TSO = (ES + 7) << 18 | 3


def test_parse_reads_fields_sequence_and_flags_bad_messages(spark: Any) -> None:
    values = [
        dml("users", "INSERT", {"id": "1", "name": "ann"}, es=ES),
        dml("users", "UPDATE", {"id": "1", "name": "bob"}, old={"name": "ann"}, es=ES, commit_ts=TSO),
        '{"id":0,"database":"","table":"","pkNames":null,"isDdl":false,"type":"TIDB_WATERMARK",'
        '"es":1,"ts":2,"sql":"","sqlType":null,"mysqlType":null,"data":null,"old":null,'
        '"_tidb":{"watermarkTs":262144}}',
        ddl("users", "ALTER", "ALTER TABLE users ADD COLUMN age INT", es=ES + 9),
        "not json at all",
        dml("users", "UPSERT", {"id": "1"}, es=ES),
    ]
    parsed = parse_messages(records(spark, values, partition=2)).select(
        "offset", "database", "table", "type", "is_ddl", "sql", F.col("row")["name"].alias("name"),
        F.col("old")["name"].alias("old_name"), "_lakefeed_seq", "_lakefeed_commit_ts", "valid",
    )
    t = dt.datetime.fromtimestamp(ES / 1000, dt.UTC)
    expected = spark.createDataFrame([
        (0, "shop", "users", "INSERT", False, "", "ann", None, (ES << 18, 2, 0), t, True),
        (1, "shop", "users", "UPDATE", False, "", "bob", "ann", (TSO, 2, 1), t + dt.timedelta(milliseconds=7),
         True),
        (3, "shop", "users", "ALTER", True, "ALTER TABLE users ADD COLUMN age INT", None, None,
         ((ES + 9) << 18, 2, 3), t + dt.timedelta(milliseconds=9), True),
        (4, None, None, None, False, None, None, None, (None, 2, 4), None, False),
        (5, "shop", "users", "UPSERT", False, "", None, None, (ES << 18, 2, 5), t, False),
    ], "offset LONG, database STRING, table STRING, type STRING, is_ddl BOOLEAN, sql STRING, name STRING, "
       "old_name STRING, _lakefeed_seq STRUCT<ts: BIGINT, partition: INT, offset: BIGINT>, "
       "_lakefeed_commit_ts TIMESTAMP, valid BOOLEAN")
    assertDataFrameEqual(parsed, expected)
