"""Each partition strategy, through the runner and the bundled broker, puts every row on the partition
its documentation states (computed here from the documented CRC-32 rule, not by calling the
dispatcher), and the order of one key's changes holds."""

import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterable

from changefeed.dispatch.router import DispatchRule
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from lakefeed_testing.own_broker import OwnBroker
from tests.changefeed.conftest import options
from tests.changefeed.consume import Record, read_topic

PARTITIONS = 4
ROWS = 40
ROUNDS = 3


def documented_hash(parts: Iterable[object]) -> int:
    """partition.py: CRC-32 chained over each part's text followed by a NUL byte."""
    crc = 0
    for part in parts:
        crc = zlib.crc32(str(part).encode() + b"\x00", crc)
    return crc


def _workload(mysql: MySQLServer, database: str, table: str) -> None:
    mysql.execute(
        f"CREATE TABLE {table} (id INT PRIMARY KEY, grp INT NOT NULL, u INT NOT NULL UNIQUE, n INT NOT NULL)",
        database=database,
    )
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, 0)", [(i, i % 5, 1000 + i) for i in range(ROWS)])
        conn.commit()
        for _ in range(ROUNDS):
            for i in range(0, ROWS, 3):  # many small transactions, so `ts` spreads them out
                cur.execute(f"UPDATE {table} SET n = n + 1 WHERE id = %s", (i,))
                conn.commit()
        cur.execute(f"DELETE FROM {table} WHERE id % 10 = 0")
        conn.commit()


def _expected_partition(strategy: str, database: str, table: str, message: dict[str, object]) -> int:
    row = message["data"][0]  # type: ignore[index]
    if strategy == "default":
        return documented_hash((database, table, row["id"])) % PARTITIONS
    if strategy == "index-value":
        return documented_hash((database, table, row["u"])) % PARTITIONS
    if strategy == "table":
        return documented_hash((database, table)) % PARTITIONS
    if strategy == "columns":
        return documented_hash([row["grp"]]) % PARTITIONS
    assert strategy == "ts"
    return int(message["_tidb"]["commitTs"]) % PARTITIONS  # type: ignore[index]


def test_each_strategy_uses_its_documented_partition_and_keeps_key_order(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker
) -> None:
    start = Checkpoint(start_position(settings), 0)
    prefix = f"d-{uuid.uuid4().hex[:6]}"
    strategies = {
        "t_default": DispatchRule((f"{database}.t_default",), "default", f"{prefix}-default"),
        "t_index": DispatchRule((f"{database}.t_index",), "index-value", f"{prefix}-index", index=("u",)),
        "t_table": DispatchRule((f"{database}.t_table",), "table", f"{prefix}-table"),
        "t_columns": DispatchRule((f"{database}.t_columns",), "columns", f"{prefix}-columns", columns=("grp",)),
        "t_ts": DispatchRule((f"{database}.t_ts",), "ts", f"{prefix}-ts"),
    }
    for table in strategies:
        _workload(mysql, database, table)
    feed = Changefeed(
        ChangefeedSpec(
            f"dispatch-{prefix}",
            settings,
            own_broker.uri(f"{prefix}-rest", partition_num=PARTITIONS, enable_tidb_extension="true"),
            capture=options(change_filter=ChangeFilter(TableFilter([f"{database}.*"]))),
            rules=tuple(strategies.values()),
            start=start,
            target=start_position(settings),
        )
    )
    feed.start()
    assert feed.wait(90) and feed.state == "finished", feed.error
    per_table = ROWS + ROUNDS * len(range(0, ROWS, 3)) + ROWS // 10
    assert feed.rows == per_table * len(strategies)

    for table, rule in strategies.items():
        assert rule.topic is not None
        records = read_topic(own_broker.bootstrap, rule.topic, PARTITIONS, expected=per_table + 1)
        rows = [r for r in records if not r.message["isDdl"]]
        assert len(rows) == per_table, table
        used: set[int] = set()
        for record in rows:
            expected = _expected_partition(rule.partition, database, table, record.message)
            assert record.partition == expected, (
                f"{rule.partition}: row {record.message['data']} on the wrong partition"
            )
            used.add(record.partition)
        if rule.partition in ("default", "index-value", "ts"):
            assert len(used) > 1, f"{rule.partition} should spread rows over partitions"
        _assert_key_order(rule.partition, rows)


def _assert_key_order(strategy: str, rows: list[Record]) -> None:
    """Per key: INSERT first, then n = 1, 2, 3, then DELETE. Read in partition order for key-hashing
    strategies; `ts` documents no per-key order across partitions, so its consumers order by commitTs."""
    if strategy == "ts":
        rows = sorted(rows, key=lambda r: (r.message["_tidb"]["commitTs"], r.partition, r.offset))
    history: dict[str, list[tuple[str, str]]] = defaultdict(list)
    partitions: dict[str, set[int]] = defaultdict(set)
    for record in rows:
        message = record.message
        row = message["data"][0]
        history[row["id"]].append((message["type"], row["n"]))
        partitions[row["id"]].add(record.partition)
    for key, changes in history.items():
        updates = sum(1 for kind, _ in changes if kind == "UPDATE")
        expected = [("INSERT", "0")] + [("UPDATE", str(n)) for n in range(1, updates + 1)]
        if int(key) % 10 == 0:
            expected.append(("DELETE", str(updates)))
        assert changes == expected, f"{strategy}: key {key} out of order: {changes}"
        if strategy != "ts":
            assert len(partitions[key]) == 1, f"{strategy}: key {key} spread over {partitions[key]}"
