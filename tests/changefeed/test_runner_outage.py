"""Broker stopped mid-stream, then restarted, with three changefeeds in one process:

- A (table `a` -> bundled broker): while the broker is down its checkpoint never passes an
  unacknowledged row; after the restart it retries from its checkpoint and delivers everything.
- C (table `a` -> bundled broker, tiny memory quota so it is blocked in send): removed during the
  outage, returns within a second with its thread ended.
- B (table `b` -> Apache Kafka): keeps advancing the whole time.

The bundled broker keeps partitions in memory today, so a restart loses what it held: this test checks
rows acknowledged before the stop by reading them back before the stop, and the outage rows after the
restart. With disk storage the rows from before the stop must also be readable after the restart.
"""

import time
import uuid
from collections.abc import Callable
from pathlib import Path

from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint, Position
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import KafkaReference, MySQLServer
from lakefeed_testing.own_broker import OwnBroker
from sink.retry import Backoff
from tests.changefeed.conftest import options
from tests.changefeed.consume import read_topic


def _insert(mysql: MySQLServer, database: str, table: str, ids: range, per_txn: int = 10) -> None:
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        for first in range(ids.start, ids.stop, per_txn):
            cur.executemany(
                f"INSERT INTO {table} VALUES (%s, %s)", [(i, "x" * 50) for i in range(first, first + per_txn)]
            )
            conn.commit()


def _reached(feed: Changefeed, position: Position) -> Callable[[], bool]:
    def check() -> bool:
        checkpoint = feed.checkpoint
        return checkpoint is not None and checkpoint.position.sort_key >= position.sort_key

    return check


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _ids(bootstrap: str, topic: str, expected: int) -> set[int]:
    records = read_topic(bootstrap, topic, 1, expected=expected, timeout=20)
    return {int(r.message["data"][0]["id"]) for r in records if not r.message["isDdl"]}


def test_outage_restart_and_remove_during_outage(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, kafka: KafkaReference, tmp_path: Path
) -> None:
    broker = OwnBroker(tmp_path / "broker")
    broker.root.mkdir()
    broker.start()
    mysql.execute("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(60))", database=database)
    mysql.execute("CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(60))", database=database)
    start = Checkpoint(start_position(settings), 0)
    topic_a, topic_b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"

    def spec(name: str, table: str, uri: str, **overrides: object) -> ChangefeedSpec:
        values: dict[str, object] = {
            "capture": options(change_filter=ChangeFilter(TableFilter([f"{database}.{table}"])), blocking=True),
            "start": start,
            "checkpoint_store_url": f"sqlite:///{tmp_path / name}.db",
            "checkpoint_interval_s": 0.1,
            "backoff": Backoff(initial=0.3, maximum=1.0),
            "delivery_timeout_ms": 3000,
        }
        values.update(overrides)
        return ChangefeedSpec(name, settings, uri, **values)  # type: ignore[arg-type]

    feed_a = Changefeed(spec("A", "a", broker.uri(topic_a, partition_num=1)))
    feed_c = Changefeed(spec("C", "a", broker.uri(f"c-{topic_a}", partition_num=1), memory_quota=500))
    feed_b = Changefeed(spec("B", "b", f"kafka://{kafka.bootstrap_servers}/{topic_b}?partition-num=1"))
    feeds = (feed_a, feed_b, feed_c)
    try:
        for feed in feeds:
            feed.start()
        _insert(mysql, database, "a", range(0, 100))
        _insert(mysql, database, "b", range(0, 100))
        before_stop = start_position(settings)
        for feed in feeds:
            _wait(_reached(feed, before_stop), 30, f"{feed.spec.changefeed_id} before the outage")
        # Everything acknowledged so far is on the broker.
        assert _ids(broker.bootstrap, topic_a, 100) == set(range(100))

        broker.stop()
        outage_start = start_position(settings)  # nothing of table `a` after this is acknowledged yet
        _insert(mysql, database, "a", range(100, 200))
        _insert(mysql, database, "b", range(100, 200))
        outage_end = start_position(settings)

        # B keeps advancing while A cannot; A's checkpoint never passes an unacknowledged row.
        deadline = time.monotonic() + 20
        while not _reached(feed_b, outage_end)():
            assert time.monotonic() < deadline, "B did not advance during the outage"
            checkpoint = feed_a.checkpoint
            assert checkpoint is not None and checkpoint.position.sort_key <= outage_start.sort_key
            time.sleep(0.05)
        for _ in range(40):  # and keep watching A through its delivery timeout and first retries
            checkpoint = feed_a.checkpoint
            assert checkpoint is not None and checkpoint.position.sort_key <= outage_start.sort_key
            time.sleep(0.1)
        assert feed_a.retries >= 1 and feed_a.state in ("warning", "running")

        # Remove C while the broker is down (blocked on its memory quota or in backoff).
        began = time.monotonic()
        ended = feed_c.remove()
        took = time.monotonic() - began
        assert ended and took < 1.0, f"remove took {took:.2f} s (thread ended: {ended})"
        assert feed_c.state == "removed"
        saved_c = feed_c.store.load("C")
        assert saved_c is None or saved_c.position.sort_key <= outage_start.sort_key

        # B still advances after the removal.
        _insert(mysql, database, "b", range(200, 250))
        after_remove = start_position(settings)
        _wait(_reached(feed_b, after_remove), 20, "B after removing C")

        broker.start()
        _wait(_reached(feed_a, outage_end), 60, "A after the broker restarted")
        assert feed_a.error is None
        # Every row of the outage is on the restarted broker (the memory store lost the earlier ones).
        assert _ids(broker.bootstrap, topic_a, 100) >= set(range(100, 200))
        assert _ids(kafka.bootstrap_servers, topic_b, 250) == set(range(250))
    finally:
        for feed in feeds:
            feed.remove()
        broker.stop()
