"""Shared steps of the pipeline's end-to-end tests: deliver a database's binlog to a topic with the real
changefeed, run the streaming job once over what the topics hold, and list a Delta table's row writes."""

from pathlib import Path
from typing import Any

from changefeed.dispatch.router import DispatchRule
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from spark_pipelines.config import PipelineConfig
from spark_pipelines.io.kafka import read_stream
from spark_pipelines.jobs.apply import start_query
from tests.changefeed.conftest import options

# What the pipeline needs from the changefeed: exact types and the commit timestamp in every message.
PIPELINE_PARAMS = "content-compatible=true&enable-tidb-extension=true"


def settings_of(mysql: MySQLServer) -> ConnectionSettings:
    return ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)


def deliver(settings: ConnectionSettings, database: str, uri: str, start: Checkpoint, *,
            rules: tuple[DispatchRule, ...] = (), store: Path | None = None) -> None:
    """Run a changefeed for `database` from `start` up to the server's current position."""
    feed = Changefeed(ChangefeedSpec(
        f"feed-{database}-{abs(hash(uri)) % 10**6}", settings, uri,
        capture=options(change_filter=ChangeFilter(TableFilter([f"{database}.*"])), blocking=True),
        rules=rules, start=start, target=start_position(settings),
        checkpoint_store_url=f"sqlite:///{store}" if store else "sqlite://",
    ))
    feed.create()
    feed.start()
    assert feed.wait(90) and feed.state == "finished", feed.error


def run_once(spark: Any, config: PipelineConfig) -> None:
    """The streaming job with availableNow: apply what the topics hold, then stop."""
    query = start_query(spark, read_stream(spark, config.source), config)
    query.awaitTermination(timeout=240)
    assert not query.isActive, "the availableNow query did not finish"
    assert query.exception() is None, query.exception()


def row_writes(spark: Any, path: str) -> list[str]:
    """The Delta table's writes of rows, oldest first: MERGE, or APPEND for a plain append (the first write
    into a table the job created)."""
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation", "operationParameters")
    found = []
    for _, operation, params in sorted(history.collect()):
        if operation == "MERGE":
            found.append("MERGE")
        elif operation == "WRITE" and params.get("mode") == "Append":
            found.append("APPEND")
    return found
