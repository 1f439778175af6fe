"""A Spark Declarative Pipelines definition over our canal-JSON topic (loaded by `spark-pipelines run`, not by
pytest): one view of typed change rows made by our own transforms, an append flow of those rows into a Delta
streaming table, and `create_auto_cdc_flow` from them into a second Delta table, sequenced by our commit
sequence, deletes by our delete marker. The pipeline's `configuration` names the brokers and the topic."""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession

from spark_pipelines.schemas import column_type
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ, parse_messages
from spark_pipelines.transforms.rows import DELETE, OP, TableShape, changes_of

# AUTO CDC targets are declared up front, so the table's columns are too (our own job reads them from the messages).
SHAPE = TableShape("shop", "acct", (("id", column_type("int")), ("owner", column_type("varchar(20)"))), ("id",))
spark = SparkSession.active()


@dp.temporary_view
def acct_changes() -> DataFrame:
    records = (spark.readStream.format("kafka")
               .option("kafka.bootstrap.servers", spark.conf.get("lakefeed.bootstrap_servers"))
               .option("subscribe", spark.conf.get("lakefeed.topic"))
               .option("startingOffsets", "earliest").load())
    return changes_of(parse_messages(records), SHAPE)


dp.create_streaming_table("acct_log", format="delta")


@dp.append_flow(target="acct_log")
def acct_log_flow() -> DataFrame:
    return spark.readStream.table("acct_changes")


dp.create_streaming_table("acct", format="delta")
dp.create_auto_cdc_flow(target="acct", source="acct_changes", keys=list(SHAPE.primary_key), sequence_by=SEQ,
                        apply_as_deletes=f"{OP} = '{DELETE}'", except_column_list=[OP, COMMIT_TS],
                        stored_as_scd_type=1)
