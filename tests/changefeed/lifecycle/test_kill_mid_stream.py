"""kill -9 a `changefeed server` while rows stream through the batched delivery path (a batch per
transaction, acknowledged as one) with many batches in flight (the broker paused), restart it on its
data dir: the topic
holds every committed change (no gap) and each key's changes in commit order; duplicates, from the
replay after the acknowledged checkpoint, are the only difference (at-least-once, as in TiCDC)."""

import random
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from lakefeed_testing import MySQLServer
from tests.changefeed.lifecycle.conftest import Process, StartServer, cli_json, source_uri, wait_for

PARTITIONS = 3


class KeyLog:
    """Every row message of a topic, per key in partition order: the `v` of each INSERT/UPDATE."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"k-{uuid.uuid4().hex[:8]}",
                                  "enable.auto.commit": False})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self.versions: dict[int, list[int]] = {}
        self.partition_of: dict[int, int] = {}

    def poll(self) -> None:
        for record in self.consumer.consume(2000, timeout=0.5):
            if record.error() is not None:
                continue
            message = orjson.loads(record.value())
            if message["isDdl"] or message["type"] not in ("INSERT", "UPDATE"):
                continue
            row = message["data"][0]
            key = int(row["id"])
            assert self.partition_of.setdefault(key, record.partition()) == record.partition(), key
            self.versions.setdefault(key, []).append(int(row["v"]))

    def latest(self) -> dict[int, int]:
        return {key: seen[-1] for key, seen in self.versions.items()}

    def close(self) -> None:
        self.consumer.close()


def _table(mysql: MySQLServer, database: str) -> dict[int, int]:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT id, v FROM t")
        return {int(r[0]): int(r[1]) for r in cur.fetchall()}


def _caught_up(server: Process, mysql: MySQLServer) -> bool:
    checkpoint = cli_json(server, "query", "-c", "kill")["checkpoint"]
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        name, size = cur.fetchall()[-1][:2]
    return bool(checkpoint["file"] == name and checkpoint["pos"] >= int(size))


def test_kill_9_mid_stream_no_gap_and_per_key_order(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)", database=database)
    server = start_server("s1")
    topic = f"kill-{database}"
    config = tmp_path / "cf.yaml"
    config.write_text(f"snapshot-mode: never\nfilter:\n  rules: ['{database}.*']\n")
    cli_json(server, "create", "--changefeed-id", "kill", "--source", source_uri(mysql),
             "--sink-uri", f"kafka://{broker.bootstrap}/{topic}?partition-num={PARTITIONS}", "--config", str(config))

    stop = threading.Event()
    transactions = [0]

    def writer() -> None:  # each transaction: 20 new keys at v=0, and +1 on 15 keys written before
        rng = random.Random(7)
        next_id = 0
        with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
            while not stop.is_set():
                cur.executemany("INSERT INTO t VALUES (%s, 0)", [(i,) for i in range(next_id, next_id + 20)])
                next_id += 20
                for key in rng.sample(range(next_id), 15):
                    cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (key,))
                conn.commit()
                transactions[0] += 1
                stop.wait(0.01)

    log = KeyLog(broker.bootstrap, topic)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_for(lambda: (log.poll(), len(log.versions) >= 200)[1], 60, "rows streaming into the topic", 0)
        # The broker stops answering for a while: batches pile up in flight (encoded, produced, not
        # acknowledged) across several checkpoint intervals; the changefeed is killed in that state, so
        # a checkpoint that ran ahead of the acknowledgements would be persisted and lose rows.
        broker.process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(1.5)
            before_kill = transactions[0]
            captures = subprocess.run(["pgrep", "-P", str(server.process.pid), "-f", "changefeed.source.capture_child"],
                                      capture_output=True, text=True).stdout.split()
            assert len(captures) == 1, f"the server runs {len(captures)} capture processes for its one changefeed"
            server.kill()  # SIGKILL: no flush, no last checkpoint save
            # its capture process goes with it: none left reading the binlog under the changefeed's server id
            wait_for(lambda: _ended(int(captures[0])), 10, "the killed server's capture process to end")
        finally:
            broker.process.send_signal(signal.SIGCONT)
        server = start_server("s1")  # the same data dir: resumes from the persisted checkpoint
        wait_for(lambda: transactions[0] > before_kill + 60, 60, "more transactions after the restart")
    finally:
        stop.set()
        thread.join(30)
    try:
        expected = _table(mysql, database)
        # Everything committed is acknowledged once the checkpoint reaches the binlog's end.
        wait_for(lambda: _caught_up(server, mysql), 60, "the checkpoint to reach the binlog end")
        count = -1
        while count != sum(map(len, log.versions.values())):  # read until the topic stops growing
            count = sum(map(len, log.versions.values()))
            log.poll()
        assert set(log.versions) == set(expected), f"keys missing: {sorted(set(expected) - set(log.versions))[:10]}"
        for key, seen in log.versions.items():
            # No gap: every version a key went through (each UPDATE adds 1) reached the topic. Order:
            # first appearances are in commit order; a replay after the restart repeats, never reorders.
            first = list(dict.fromkeys(seen))
            assert first == list(range(expected[key] + 1)), (key, seen)
            assert seen[-1] == expected[key], (key, seen)
        replayed = sum(len(seen) - len(set(seen)) for seen in log.versions.values())
        assert len(expected) >= 20 * (before_kill + 60)
    finally:
        log.close()
    query = cli_json(server, "query", "-c", "kill")
    assert query["state"] == "normal", query
    print(f"{len(expected)} keys, {replayed} replayed messages after the kill")


def _ended(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()  # a zombie: ended, not yet reaped
    except FileNotFoundError:
        return True
