"""The dispatch-rules and filters examples through real parts: a `changefeed server` process runs both
changefeeds, created with the `changefeed` CLI from the example files, into a `broker start` process;
the topics hold what each example's comments promise."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from services import Brokers, ChangefeedServer, binlog_end, reached, start_brokers

from lakefeed_testing import MySQLServer
from tests.changefeed.consume import Record, read_topic

EXAMPLES = Path(__file__).parents[2] / "examples" / "changefeeds"


@pytest.fixture
def shop(mysql: MySQLServer) -> Iterator[None]:
    mysql.execute("DROP DATABASE IF EXISTS shop", "CREATE DATABASE shop")
    yield
    mysql.execute("DROP DATABASE IF EXISTS shop")


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Brokers, ChangefeedServer]]:
    brokers = start_brokers(tmp_path / "broker", nodes=1)  # the examples, not the cluster, are under test
    server = ChangefeedServer(tmp_path / "changefeed")
    try:
        server.start()
        yield brokers, server
    finally:
        server.stop()
        brokers.stop()


def _create(server: ChangefeedServer, mysql: MySQLServer, bootstrap: str, example: str) -> None:
    path = EXAMPLES / f"{example}.yaml"
    match = re.search(r"^# Sink URI: kafka://[^/]+(\S+)", path.read_text(), re.MULTILINE)
    assert match
    source = f"mysql://{mysql.user}:{mysql.password}@{mysql.host}:{mysql.port}?tls=false"
    server.create("--changefeed-id", example, "--source", source, "--sink-uri",
               f"kafka://{bootstrap}{match.group(1)}", "--config", str(path))


def _workload(mysql: MySQLServer) -> None:
    mysql.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, v VARCHAR(20))",
        "CREATE TABLE events (id INT PRIMARY KEY, customer_id INT, v VARCHAR(20))",
        "CREATE TABLE ref_country (code CHAR(2) PRIMARY KEY, name VARCHAR(40))",
        "CREATE TABLE audit_log (id INT PRIMARY KEY, v VARCHAR(20))",
        "CREATE TABLE tmp_import (id INT PRIMARY KEY)",
        "CREATE TABLE scratch (id INT PRIMARY KEY)",
        database="shop",
    )
    with mysql.connect("shop", autocommit=False) as conn, conn.cursor() as cur:
        for table in ("orders", "events", "audit_log"):
            columns = "(id, v)" if table == "audit_log" else "(id, customer_id, v)"
            marks = "(%s, %s)" if table == "audit_log" else "(%s, %s, %s)"
            rows = [(i, f"v{i}") if table == "audit_log" else (i, i % 4, f"v{i}") for i in range(40)]
            cur.executemany(f"INSERT INTO {table} {columns} VALUES {marks}", rows)
        cur.executemany("INSERT INTO ref_country VALUES (%s, %s)", [("de", "Germany"), ("fr", "France")])
        cur.executemany("INSERT INTO tmp_import VALUES (%s)", [(i,) for i in range(10)])
        conn.commit()
        cur.execute("DELETE FROM audit_log WHERE id < 10")  # a purge: the filters example drops it
        cur.execute("UPDATE events SET v = 'changed' WHERE id < 8")
        conn.commit()
    mysql.execute("DROP TABLE scratch", database="shop")


def _read(bootstrap: str, topic: str) -> list[Record]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:6]}"})
    try:
        partitions = len(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in range(partitions))
    finally:
        consumer.close()
    records = read_topic(bootstrap, topic, partitions, expected=total)
    assert len(records) == total
    return records


def _rows(records: list[Record]) -> list[tuple[int, dict[str, Any]]]:
    """(partition, message) of the row changes (DDL and watermarks left out)."""
    return [(r.partition, r.message) for r in records if r.message.get("type") in ("INSERT", "UPDATE", "DELETE")]


def test_dispatch_and_filter_examples(mysql: MySQLServer, shop: None,
                                      running: tuple[Brokers, ChangefeedServer]) -> None:
    brokers, server = running
    for example in ("dispatch-rules", "filters"):
        _create(server, mysql, brokers.bootstrap, example)
    _workload(mysql)
    end = binlog_end(mysql)
    deadline = time.monotonic() + 60
    while not all(reached(server.cli("query", "-c", c)[0], end) for c in ("dispatch-rules", "filters")):
        assert time.monotonic() < deadline, "the changefeeds did not reach the end of the workload in 60 s"
        time.sleep(0.5)

    # dispatch-rules.yaml: a topic per rule; events of one customer in one partition; reference tables
    # in one partition; every other table in the sink URI's topic.
    orders = _rows(_read(brokers.bootstrap, "cdc_shop_orders"))
    assert sorted(int(m["data"][0]["id"]) for _, m in orders) == list(range(40))
    events = _rows(_read(brokers.bootstrap, "cdc_shop_events"))
    assert len(events) == 48
    by_customer: dict[str, set[int]] = {}
    for partition, message in events:
        by_customer.setdefault(message["data"][0]["customer_id"], set()).add(partition)
    assert len(by_customer) == 4 and all(len(parts) == 1 for parts in by_customer.values())
    reference = _rows(_read(brokers.bootstrap, "cdc_shop_reference"))
    assert len(reference) == 2 and len({p for p, _ in reference}) == 1
    default = {m["table"] for _, m in _rows(_read(brokers.bootstrap, "cdc_default"))}
    assert default == {"audit_log", "tmp_import"}

    # filters.yaml: no shop.tmp_* rows, no deletes of the audit log, no DROP statements.
    records = _read(brokers.bootstrap, "cdc_shop")
    rows = [m for _, m in _rows(records)]
    assert "tmp_import" not in {m["table"] for m in rows}
    audit = [m["type"] for m in rows if m["table"] == "audit_log"]
    assert audit == ["INSERT"] * 40
    assert sum(1 for m in rows if m["table"] == "orders") == 40
    ddl = [r.message["sql"] for r in records if r.message.get("isDdl")]
    assert any(sql.startswith("CREATE TABLE scratch") for sql in ddl)
    assert not [sql for sql in ddl if sql.upper().startswith("DROP")]
