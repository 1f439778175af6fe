"""MariaDB -> capture -> canal-JSON -> Apache Kafka: a consumer rebuilds each table's exact state."""

import uuid
from typing import Any

import orjson
from confluent_kafka import Consumer

from changefeed.codec.canal_json import CanalJsonEncoder
from changefeed.delivery import Delivery
from changefeed.dispatch.router import Router
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.source.capture import CaptureSource, start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import KafkaReference, MySQLServer
from sink.kafka import KafkaSink, prepare_topic
from sink.uri import parse_sink_uri
from tests.changefeed.conftest import options


def _workload(mysql: MySQLServer, database: str) -> None:
    mysql.execute(
        "CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(40), balance DECIMAL(12,2), "
        "opened DATETIME(3), flags BIGINT UNSIGNED)",
        database=database,
    )
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        for start in range(0, 300, 50):
            cur.executemany(
                "INSERT INTO acct VALUES (%s, %s, %s, %s, %s)",
                [
                    (
                        i,
                        f"owner-{i} ✓",
                        f"{i}.{i % 100:02d}",
                        f"2024-01-02 03:04:05.{i % 1000:03d}",
                        18446744073709551615 - i,
                    )
                    for i in range(start, start + 50)
                ],
            )
            conn.commit()
        cur.execute("UPDATE acct SET balance = balance + 1 WHERE id % 3 = 0")
        cur.execute("UPDATE acct SET id = id + 1000 WHERE id % 10 = 1")  # key-changing updates
        cur.execute("DELETE FROM acct WHERE id % 7 = 0")
        conn.commit()


def _expected(mysql: MySQLServer, database: str) -> dict[str, dict[str, str]]:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT CAST(id AS CHAR), owner, CAST(balance AS CHAR), CAST(opened AS CHAR), "
            "CAST(flags AS CHAR) FROM acct"
        )
        return {
            row[0]: dict(zip(("id", "owner", "balance", "opened", "flags"), row, strict=True))
            for row in cur.fetchall()
        }


def _rebuild(kafka: KafkaReference, topic: str, expected_messages: int) -> tuple[dict[str, Any], int]:
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    state: dict[str, Any] = {}
    count = 0
    try:
        for _ in range(60):
            for record in consumer.consume(1000, timeout=1.0):
                assert record.error() is None
                message = orjson.loads(record.value())
                count += 1
                if message["isDdl"]:
                    continue
                row = message["data"][0]
                if message["type"] == "DELETE":
                    state.pop(row["id"], None)
                else:
                    state[row["id"]] = row
            if count >= expected_messages:
                break
    finally:
        consumer.close()
    return state, count


def test_consumer_rebuilds_the_exact_table(mysql: MySQLServer, database: str, kafka: KafkaReference) -> None:
    settings = ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)
    start = Checkpoint(start_position(settings), 0)
    _workload(mysql, database)
    topic = f"cdc-{uuid.uuid4().hex[:8]}"
    config = parse_sink_uri(f"kafka://{kafka.bootstrap_servers}/{topic}?partition-num=3")
    info = prepare_topic(config)
    sink = KafkaSink(config, message_limit=info.max_message_bytes)
    delivery = Delivery(
        sink,
        CanalJsonEncoder(),
        Router(topic),
        {topic: info.partitions},
        message_limit=info.max_message_bytes,
        start=start,
    )
    source = CaptureSource(
        settings, options(change_filter=ChangeFilter(TableFilter([f"{database}.*"]))), start=start
    )
    try:
        delivery.run(source.events())
    finally:
        source.close()
    assert sink.flush(30) == 0
    sink.close()
    assert delivery.tracker.in_flight == 0
    final = delivery.checkpoint
    assert final is not None and final.position.sort_key > start.position.sort_key
    state, count = _rebuild(kafka, topic, delivery.stats.messages)
    assert count == delivery.stats.messages
    assert state == _expected(mysql, database)
