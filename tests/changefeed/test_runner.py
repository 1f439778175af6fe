"""The changefeed runner end to end, unchanged on the bundled broker and on Apache Kafka: MariaDB ->
capture -> canal-JSON -> broker; a consumer rebuilds the table; the checkpoint is persisted and a
second run resumes from it without re-sending acknowledged rows."""

import uuid
from pathlib import Path

import pytest

from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import KafkaReference, MySQLServer
from lakefeed_testing.own_broker import OwnBroker
from tests.changefeed.conftest import options
from tests.changefeed.consume import read_topic, rebuild


@pytest.fixture(params=["own", "kafka"])
def broker_uri(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(bootstrap, sink URI prefix without topic) for the bundled broker or Apache Kafka."""
    topic = f"run-{uuid.uuid4().hex[:8]}"
    if request.param == "own":
        own: OwnBroker = request.getfixturevalue("own_broker")
        return own.bootstrap, own.uri(topic, partition_num=3)
    kafka: KafkaReference = request.getfixturevalue("kafka")
    return kafka.bootstrap_servers, f"kafka://{kafka.bootstrap_servers}/{topic}?partition-num=3"


def _rows(mysql: MySQLServer, database: str, first: int, count: int) -> None:
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        for start in range(first, first + count, 50):
            cur.executemany(
                "INSERT INTO acct VALUES (%s, %s, %s)", [(i, f"o-{i}", i * 3) for i in range(start, start + 50)]
            )
            conn.commit()
        cur.execute(f"UPDATE acct SET n = n + 1 WHERE id >= {first} AND id % 4 = 0")
        cur.execute(f"DELETE FROM acct WHERE id >= {first} AND id % 9 = 0")
        conn.commit()


def _table(mysql: MySQLServer, database: str) -> dict[str, dict[str, str | None]]:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT CAST(id AS CHAR), owner, CAST(n AS CHAR) FROM acct")
        return {r[0]: {"id": r[0], "owner": r[1], "n": r[2]} for r in cur.fetchall()}


def _spec(
    settings: ConnectionSettings,
    database: str,
    uri: str,
    store: Path,
    target: Checkpoint,
    start: Checkpoint | None = None,
) -> ChangefeedSpec:
    return ChangefeedSpec(
        "feed-1",
        settings,
        uri,
        capture=options(change_filter=ChangeFilter(TableFilter([f"{database}.*"])), blocking=True),
        start=start,
        target=target.position,
        checkpoint_store_url=f"sqlite:///{store}",
    )


def test_runner_delivers_persists_and_resumes(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, broker_uri: tuple[str, str], tmp_path: Path
) -> None:
    bootstrap, uri = broker_uri
    topic = uri.split("/")[3].split("?")[0]
    store = tmp_path / "checkpoints.db"
    start = Checkpoint(start_position(settings), 0)
    mysql.execute("CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(40), n BIGINT)", database=database)
    _rows(mysql, database, 0, 300)
    first_target = Checkpoint(start_position(settings), 0)

    feed = Changefeed(_spec(settings, database, uri, store, first_target, start))
    feed.create()
    feed.start()
    assert feed.wait(60), "the changefeed did not reach its target"
    assert feed.state == "finished" and feed.error is None
    saved = feed.store.load("feed-1")
    assert saved is not None and saved.position.sort_key >= first_target.position.sort_key
    first_records = read_topic(bootstrap, topic, 3, expected=feed.rows + 1)
    assert rebuild(first_records) == _table(mysql, database)

    # Second run, same store: resumes from the persisted checkpoint, sends only the new rows.
    _rows(mysql, database, 1000, 100)
    second = Changefeed(_spec(settings, database, uri, store, Checkpoint(start_position(settings), 0)))
    second.start()
    assert second.wait(60) and second.state == "finished", second.error
    records = read_topic(bootstrap, topic, 3, expected=len(first_records) + second.rows)
    rows = [r for r in records if not r.message["isDdl"]]
    assert len(rows) == feed.rows + second.rows, "a resumed changefeed re-sent acknowledged rows"
    assert second.rows == 100 + 25 + 11  # inserts, updates of id % 4 == 0, deletes of id % 9 == 0
    assert rebuild(records) == _table(mysql, database)
