"""[transactions] under [safety]'s faults: transactional writers on a 3-node cluster (RF 3, min.insync.replicas=2)
while nodes are killed -9 (partition leaders, the transaction coordinator, the active controller, every node),
paused, or restarted with damaged storage. Checked with a read_committed consumer (txn_clients.py): no record of
an aborted transaction visible, no record of a committed one lost or doubled, a transaction whose outcome the
client could not learn all or nothing, and no hanging last stable offset once the writers stop.

CI runs the fixed list of coordinator and leader kills and one short seeded nemesis. The long run
(docs/development.md): `LAKEFEED_TXN_FAULT_SEEDS=1-10 LAKEFEED_FAULT_ROUNDS=12 .venv/bin/pytest
tests/broker/cluster/test_transaction_faults.py -k nemesis`; `LAKEFEED_CLUSTER_TESTS=kafka` runs the same tests
against three Apache Kafka 4.3 nodes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.faults import Nemesis, seeds_from_env
from tests.broker.cluster.harness import Cluster, until
from tests.broker.cluster.txn_clients import (
    TransactionalWriter,
    check_transactions,
    read_committed_values,
    transaction_coordinator,
)  # fmt: skip

TOPIC_CONFIG = {"min.insync.replicas": "2"}


@dataclass
class Writers:
    members: list[TransactionalWriter] = field(default_factory=list)

    def acked_since(self, partition: int | None, since: float) -> int:
        return sum(w.acked_since(partition, since) for w in self.members)

    def stop(self) -> None:
        for writer in self.members:
            writer.stop()


@dataclass
class TransactionNemesis(Nemesis):
    """The safety nemesis plus a kill -9 of a writer's transaction coordinator."""

    transactional_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.faults["kill_coordinator"] = self.kill_coordinator

    def kill_coordinator(self) -> str:
        transactional_id = self.rng.choice(self.transactional_ids)
        node = transaction_coordinator(self.cluster, transactional_id)
        delay = self.kill_and_restart(node)
        return f"kill -9 of node {node}, coordinator of {transactional_id}, restarted after {delay:.1f} s"


def _run(cluster: Cluster, seed: int, rounds: int, names: list[str] | None) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3, config=TOPIC_CONFIG)
    rng = random.Random(seed)
    writers = Writers([TransactionalWriter(cluster.bootstrap, topic, first=n * 10**9, seed=rng.randrange(10**6))
                       for n in range(2)])
    for writer in writers.members:
        writer.start()
    nemesis = TransactionNemesis(cluster, topic, writers, seed,
                                 transactional_ids=[w.transactional_id for w in writers.members])
    try:
        until(lambda: writers.acked_since(None, 0) >= 60, 60, "first committed transactions")
        nemesis.run(rounds, names)
        writers.stop()
    except BaseException:
        print("\n".join(nemesis.history))
        raise
    got = read_committed_values(cluster.bootstrap, topic)
    summary = check_transactions(writers.members, got)
    producers = sum(w.producers for w in writers.members)
    print(f"{cluster.name} seed {seed}: {summary}; {producers} producers for 2 transactional ids")


def test_coordinator_and_leader_kills_lose_no_committed_and_show_no_aborted_record(cluster: Cluster) -> None:
    _run(cluster, seed=1, rounds=0, names=["kill_coordinator", "kill_leader", "kill_coordinator", "damage_storage"])


@pytest.mark.parametrize("seed", seeds_from_env("LAKEFEED_TXN_FAULT_SEEDS", "3"))
def test_seeded_nemesis_with_transactional_writers(cluster: Cluster, seed: int) -> None:
    _run(cluster, seed, int(os.environ.get("LAKEFEED_FAULT_ROUNDS", "4")), None)


ABANDONED_WRITER = """
import sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[3], "acks": "all",
                     "transaction.timeout.ms": 5000, "message.timeout.ms": 5000})
producer.init_transactions(60)
producer.begin_transaction()
for value in range(3):
    producer.produce(sys.argv[2], value=b"abandoned", partition=value)
assert producer.flush(30) == 0
print("open", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("kill_coordinator", [False, True], ids=["writer", "writer-and-coordinator"])
def test_a_writer_killed_mid_transaction_is_aborted_by_its_timeout(cluster: Cluster, kill_coordinator: bool) -> None:
    """kill -9 of a client holding an open transaction (and of its coordinator): the transaction times out
    (transaction.timeout.ms), is aborted, and the last stable offset moves past it: read_committed readers are
    not held back for ever, and never see its records."""
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3, config=TOPIC_CONFIG)
    transactional_id = f"tx-{topic}"
    writer = subprocess.Popen([sys.executable, "-c", ABANDONED_WRITER, cluster.bootstrap, topic, transactional_id],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"open\n"
        coordinator = transaction_coordinator(cluster, transactional_id)
    finally:
        writer.kill()
        writer.wait(10)
    if kill_coordinator:
        cluster.kill(coordinator)
    committed = TransactionalWriter(cluster.bootstrap, topic, first=0, commit_share=1.0).start()
    until(lambda: committed.acked_since(None, 0) >= 12, 60, "transactions committed after the abandoned one")
    committed.stop()
    got = read_committed_values(cluster.bootstrap_of([n for n in cluster.node_ids if cluster.alive(n)]), topic)
    print(f"{cluster.name}: {check_transactions([committed], got)}")
    assert sum(len(v) for v in got.values()) == sum(len(t.values) for t in committed.transactions)
