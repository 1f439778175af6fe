"""Transactional writers for the fault tests, and the check of what read_committed readers see.

A `TransactionalWriter` runs transactions of a few records over every partition, committing most and aborting
some, and records each transaction's outcome as the client learnt it:

- committed: commit_transaction returned;
- aborted: abort_transaction returned (also after a commit that failed with an abortable error);
- unknown: the producer failed fatally (fenced, or a commit whose answer never came) in the middle; the next
  producer's InitProducerId on the same transactional.id completes or aborts it (Kafka's KIP-98 design: a
  transaction in PrepareCommit is committed, an Ongoing one is aborted), so it is all or nothing.

The checker asks of a read_committed reader what Kafka promises (KIP-98, "Transactional Guarantees"): nothing of
an aborted transaction, every record of a committed one exactly once, all or none of an unknown one; and that
the last stable offset reaches the high watermark once no transaction is open (no hanging transaction).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest

from tests.broker.cluster.clients import describe
from tests.broker.cluster.harness import Cluster, until
from tests.broker.kio_wire import roundtrip

# A transaction left open by a killed client is aborted by the coordinator after this (Kafka's default is 60 s).
# librdkafka requires message.timeout.ms <= transaction.timeout.ms; both bound a write stuck under a fault.
TRANSACTION_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Transaction:
    values: tuple[int, ...]
    outcome: str  # "committed", "aborted" or "unknown"
    ended_at: float  # monotonic


def transaction_coordinator(cluster: Cluster, transactional_id: str) -> int:
    """The node FindCoordinator names for `transactional_id` (key type 1)."""

    def ask() -> Any:
        node = next(n for n in cluster.node_ids if cluster.alive(n))
        _, answer = roundtrip(cluster.ports[node], 10, 3, FindCoordinatorRequest(key=transactional_id, key_type=1))
        return int(answer.error_code) == 0 and int(answer.node_id)

    return int(until(ask, 30, f"the transaction coordinator of {transactional_id}"))  # type: ignore[call-overload]


@dataclass
class TransactionalWriter:
    """Transactions of `size` records in a thread, round-robin over `partitions`, values unique across writers
    (`first` + a counter); `transactions` holds every transaction that ended, with its outcome."""

    bootstrap: str
    topic: str
    first: int
    partitions: int = 3
    size: int = 6
    commit_share: float = 0.75
    seed: int = 0
    transactional_id: str = field(default_factory=lambda: f"tx-{uuid.uuid4().hex[:8]}")
    transactions: list[Transaction] = field(default_factory=list)
    producers: int = 0  # how many producers it took (a new one after each fatal error)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._rng = random.Random(self.seed)
        self._next = self.first
        self._thread = threading.Thread(target=self._guarded, daemon=True, name=self.transactional_id)
        self.error: BaseException | None = None

    def start(self) -> TransactionalWriter:
        self._thread.start()
        return self

    def stop(self, timeout: float = 150) -> None:
        self._stop.set()
        self._thread.join(timeout)
        assert self.error is None, f"{self.transactional_id} stopped: {self.error!r}"
        assert not self._thread.is_alive(), f"{self.transactional_id}: its transaction did not end in {timeout} s"

    def acked_since(self, partition: int | None, since: float) -> int:
        """Records of transactions committed at or after `since` (the nemesis's "writes acknowledged again")."""
        assert self.error is None, f"{self.transactional_id} stopped: {self.error!r}"
        return sum(len(t.values) for t in list(self.transactions) if t.outcome == "committed" and t.ended_at >= since)

    def values_of(self, outcome: str) -> set[int]:
        return {v for t in self.transactions if t.outcome == outcome for v in t.values}

    def _new_producer(self) -> Producer:
        self.producers += 1
        producer = Producer({
            "bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id, "acks": "all",
            "linger.ms": 2, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "message.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "request.timeout.ms": 10_000, "retry.backoff.max.ms": 500, "reconnect.backoff.max.ms": 500,
        })
        deadline = time.monotonic() + 120
        while True:  # a coordinator moving under a fault answers retriable errors for a while
            try:
                producer.init_transactions(30)
                return producer
            except KafkaException as exc:
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise

    def _guarded(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by acked_since and stop, in the test's thread
            self.error = exc

    def _run(self) -> None:
        producer = self._new_producer()
        while not self._stop.is_set():
            values = tuple(range(self._next, self._next + self.size))
            self._next += self.size
            commit = self._rng.random() < self.commit_share
            outcome, usable = self._transaction(producer, values, commit)
            self.transactions.append(Transaction(values, outcome, time.monotonic()))
            if not usable:
                producer = self._new_producer()  # fences the old one and completes or aborts its transaction

    def _transaction(self, producer: Producer, values: tuple[int, ...], commit: bool) -> tuple[str, bool]:
        """(outcome, whether the producer can run the next transaction)."""
        try:
            producer.begin_transaction()
            for value in values:
                self._produce(producer, value)
        except KafkaException as exc:
            return self._after(producer, exc.args[0], committing=False)
        return self._end(producer, commit)

    def _produce(self, producer: Producer, value: int) -> None:
        while True:
            try:
                producer.produce(self.topic, value=str(value).encode(), partition=value % self.partitions)
                return
            except BufferError:
                producer.poll(0.05)

    def _end(self, producer: Producer, commit: bool) -> tuple[str, bool]:
        deadline = time.monotonic() + 120
        while True:
            try:
                if commit:
                    producer.commit_transaction(30)
                    return "committed", True
                producer.abort_transaction(30)
                return "aborted", True
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if error.retriable() and not error.txn_requires_abort() and time.monotonic() < deadline:
                    continue  # librdkafka: call it again; it resumes where it stopped
                return self._after(producer, error, committing=commit)

    @staticmethod
    def _after(producer: Producer, error: KafkaError, committing: bool) -> tuple[str, bool]:
        if error.txn_requires_abort():
            try:
                producer.abort_transaction(60)
                return "aborted", True
            except KafkaException:
                pass
        # Fatal (fenced), or an end whose answer never came: only a commit can have gone through, and the
        # next producer's InitProducerId settles it either way.
        return ("unknown" if committing else "aborted"), False


def read_committed_values(bootstrap: str, topic: str, timeout: float = 90) -> dict[int, list[int]]:
    """Every value a read_committed consumer reads, per partition, once the last stable offset of every
    partition has reached its high watermark (asserts that it does: a hanging transaction fails here)."""
    partitions = sorted(describe(bootstrap, topic))
    committed = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:6]}",
                          "enable.auto.commit": False, "isolation.level": "read_committed"})
    uncommitted = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ru-{uuid.uuid4().hex[:6]}",
                            "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    try:
        def stable() -> dict[int, int] | None:
            ends = {}
            for p in partitions:
                lso = committed.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                high = uncommitted.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                if lso != high:
                    return None
                ends[p] = high
            return ends

        ends: dict[int, int] = until(stable, timeout, f"{topic}: the last stable offset at the high watermark "
                                     "(no transaction left hanging)")  # type: ignore[assignment]
        committed.assign([TopicPartition(topic, p, 0) for p in partitions])
        got: dict[int, list[int]] = {p: [] for p in partitions}
        deadline = time.monotonic() + timeout

        def behind() -> bool:
            positions = committed.position([TopicPartition(topic, p) for p in partitions])
            return any(tp.offset < ends[tp.partition] for tp in positions)

        while behind():
            assert time.monotonic() < deadline, f"read {[len(v) for v in got.values()]} up to {ends} in {timeout} s"
            for message in committed.consume(500, 0.5):
                if message.error() is None:
                    got[int(message.partition() or 0)].append(int(message.value() or b"-1"))
        return got
    finally:
        committed.close()
        uncommitted.close()


def check_transactions(writers: list[TransactionalWriter], got: dict[int, list[int]]) -> str:
    """What read_committed saw, against each transaction's outcome; returns a summary for the test log."""
    seen = [v for values in got.values() for v in values]
    assert len(seen) == len(set(seen)), "a record appears more than once"
    visible = set(seen)
    transactions = [t for w in writers for t in w.transactions]
    known = {v for t in transactions for v in t.values}
    assert visible <= known, f"records no transaction wrote: {sorted(visible - known)[:5]}"
    for partition, values in got.items():  # one writer's values grow with its transactions
        for writer in writers:
            own = [v for v in values if writer.first <= v < writer.first + 10**9]
            assert own == sorted(own), f"partition {partition}: {writer.transactional_id}'s records out of order"
    counts = {"committed": 0, "aborted": 0, "unknown": 0}
    unknown_committed = 0
    for t in transactions:
        counts[t.outcome] += 1
        shown = visible.intersection(t.values)
        if t.outcome == "committed":
            assert shown == set(t.values), f"committed transaction {t.values}: {len(t.values) - len(shown)} lost"
        elif t.outcome == "aborted":
            assert not shown, f"aborted transaction {t.values}: {sorted(shown)} visible to read_committed"
        else:
            assert shown in (set(), set(t.values)), f"transaction {t.values} is half visible: {sorted(shown)}"
            unknown_committed += bool(shown)
    return (f"{counts['committed']} committed, {counts['aborted']} aborted and {counts['unknown']} unknown "
            f"transactions ({unknown_committed} of those committed), {len(visible)} records read_committed: "
            "no aborted record visible, no committed record lost")
