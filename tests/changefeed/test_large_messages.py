"""Oversized rows under each large-message-handle policy, through the bundled broker (message limit
200 kB): `none` fails naming table and key, `handle-key-only` sends the key columns, `claim-check`
stores the full message and a consumer resolves it; the rows after the big one are not held up."""

import uuid
from pathlib import Path

import orjson
import pytest

from changefeed.delivery import MessageTooLargeForPolicy
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from lakefeed_testing.own_broker import SINK_LIMIT, OwnBroker
from sink.claim_check import resolve
from sink.errors import SinkConfigError
from sink.uri import parse_sink_uri
from tests.changefeed.conftest import options
from tests.changefeed.consume import Record, read_topic

BIG = 300_000  # bytes of text in row 3: above the 200 kB limit


def _run(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker, **params: object
) -> tuple[Changefeed, str]:
    start = Checkpoint(start_position(settings), 0)
    mysql.execute("CREATE TABLE big (id INT PRIMARY KEY, body LONGTEXT)", database=database)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        for i in range(1, 7):  # one transaction per row
            cur.execute("INSERT INTO big VALUES (%s, %s)", (i, "b" * BIG if i == 3 else f"small-{i}"))
    target = start_position(settings)
    topic = f"big-{uuid.uuid4().hex[:8]}"
    feed = Changefeed(
        ChangefeedSpec(
            f"big-{topic}",
            settings,
            own_broker.uri(topic, partition_num=1, **params),
            capture=options(change_filter=ChangeFilter(TableFilter([f"{database}.big"]))),
            start=start,
            target=target,
        )
    )
    feed.start()
    assert feed.wait(60)
    return feed, topic


def _rows(own_broker: OwnBroker, topic: str, expected: int) -> list[Record]:
    records = read_topic(own_broker.bootstrap, topic, 1, expected=expected + 1, timeout=5)
    return [r for r in records if not r.message["isDdl"]]


def test_none_fails_naming_table_and_key(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker
) -> None:
    feed, topic = _run(mysql, database, settings, own_broker)
    assert feed.state == "failed" and isinstance(feed.error, MessageTooLargeForPolicy)
    text = str(feed.error)
    assert "big" in text and '"key":{"id":"3"}' in text and "large-message-handle" in text
    # Rows 1 and 2 were delivered; the checkpoint stops before row 3's transaction.
    assert [r.message["data"][0]["id"] for r in _rows(own_broker, topic, 2)] == ["1", "2"]


def test_handle_key_only_sends_the_key_and_nothing_stalls(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker
) -> None:
    feed, topic = _run(mysql, database, settings, own_broker, large_message_handle_option="handle-key-only")
    assert feed.state == "finished", feed.error
    rows = _rows(own_broker, topic, 6)
    assert [r.message["data"][0]["id"] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    key_only = rows[2].message
    assert key_only["data"] == [{"id": "3"}] and key_only["_tidb"]["onlyHandleKey"] is True
    assert all(len(r.value) <= SINK_LIMIT for r in rows)
    assert rows[3].message["data"][0]["body"] == "small-4"


def test_claim_check_stores_the_full_row_and_a_consumer_resolves_it(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker, tmp_path: Path
) -> None:
    store = tmp_path / "claims"
    feed, topic = _run(
        mysql,
        database,
        settings,
        own_broker,
        large_message_handle_option="claim-check",
        claim_check_storage_uri=store.as_uri(),
    )
    assert feed.state == "finished", feed.error
    rows = _rows(own_broker, topic, 6)
    assert [r.message["data"][0]["id"] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    location = rows[2].message["_tidb"]["claimCheckLocation"]
    assert location.startswith(store.as_uri()) and len(list(store.iterdir())) == 1
    full = orjson.loads(resolve(rows[2].value))
    assert full["data"] == [{"id": "3", "body": "b" * BIG}] and full["type"] == "INSERT"
    assert resolve(rows[0].value) == rows[0].value  # ordinary messages pass through unchanged


def test_claim_check_without_storage_fails_at_parse() -> None:
    with pytest.raises(SinkConfigError, match="needs claim-check-storage-uri"):
        parse_sink_uri("kafka://127.0.0.1:9092/t?large-message-handle-option=claim-check")
    with pytest.raises(SinkConfigError, match="large-message-handle-option='huge' is not supported"):
        parse_sink_uri("kafka://127.0.0.1:9092/t?large-message-handle-option=huge")
