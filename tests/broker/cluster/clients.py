"""confluent-kafka helpers for the cluster tests: topic state, a continuous keyed writer that records every
acknowledgement, reading a topic back, and the exactly-once / in-order check."""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.protocol.records import BatchHeader
from broker.storage.segment import scan
from tests.broker.cluster.harness import until

# Bounded everywhere: a produce that cannot complete fails within these, never hangs a test.
PRODUCER = {
    "acks": "all",
    "enable.idempotence": True,
    "message.timeout.ms": 45_000,
    "request.timeout.ms": 10_000,
    "retry.backoff.max.ms": 500,
    "reconnect.backoff.max.ms": 500,
    "partitioner": "murmur2_random",  # the Java client's key -> partition mapping
}

# partition, offset, seq, monotonic times of produce() and of the ack. The offset is None for a write librdkafka
# acknowledged implicitly: its request failed with an unknown outcome (a timeout, a dropped connection) and a
# later request of the same producer to the partition succeeded. The broker accepted that request's sequence
# only as the continuation of this one's, so this write is in the log before it, at an offset the client never
# learnt (librdkafka's rd_kafka_handle_idempotent_Produce_success -> rd_kafka_dr_implicit_ack).
Ack = tuple[int, int | None, int, float, float]


@dataclass(frozen=True)
class PartitionState:
    leader: int
    replicas: list[int]
    isr: list[int]


def new_topic_name() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


_TRANSIENT = frozenset({KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
                        KafkaError.NOT_LEADER_FOR_PARTITION})


def describe(bootstrap: str, topic: str) -> dict[int, PartitionState]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000})
    md = admin.list_topics(topic, timeout=5).topics[topic]
    if md.error is not None:
        # LEADER_NOT_AVAILABLE while a new topic's leaders reach this broker: `until` retries. Kafka names it a
        # RetriableException, but librdkafka's per-topic metadata error does not carry the retriable flag.
        if md.error.retriable() or md.error.code() in _TRANSIENT:
            raise KafkaException(md.error)
        raise AssertionError(f"topic {topic}: {md.error}")
    return {p: PartitionState(s.leader, list(s.replicas), sorted(s.isrs)) for p, s in md.partitions.items()}


def create_topic(
    bootstrap: str, topic: str, partitions: int = 3, config: dict[str, str] | None = None,
    assignment: list[list[int]] | None = None,
) -> dict[int, PartitionState]:
    """Create with RF 3 (or the given replica `assignment`) and wait until every partition has a leader and a
    full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if assignment:
        partitions = len(assignment)
        spec = NewTopic(topic, num_partitions=partitions, replica_assignment=assignment, config=config or {})
    else:
        spec = NewTopic(topic, num_partitions=partitions, replication_factor=3, config=config or {})
    admin.create_topics([spec])[topic].result(30)
    rf = len(assignment[0]) if assignment else 3

    def ready() -> dict[int, PartitionState] | None:
        state = describe(bootstrap, topic)
        good = len(state) == partitions and all(s.leader >= 0 and len(s.isr) == rf for s in state.values())
        return state if good else None

    state: dict[int, PartitionState] = until(ready, 30, f"{topic}: leaders and full ISRs")  # type: ignore[assignment]
    return state


def wait_full_isr(bootstrap: str, topic: str, rf: int = 3, timeout: float = 30) -> None:
    until(lambda: all(len(s.isr) == rf for s in describe(bootstrap, topic).values()), timeout,
          f"{topic}: every replica back in the ISR")


@dataclass
class Writer:
    """Keyed writes in a thread as fast as `interval` allows; `acked` holds an `Ack` per acknowledged write."""

    bootstrap: str
    topic: str
    keys: int = 64
    interval: float = 0.003
    acked: list[Ack] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    sent: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": self.bootstrap, **PRODUCER, "linger.ms": 2})
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, seq: int, sent_at: float, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.acked.append((message.partition(), message.offset(), seq, sent_at, time.monotonic()))
        else:
            self.failed.append((seq, str(error)))

    def _run(self) -> None:
        while not self._stop.is_set():
            seq = self.sent
            try:
                self._producer.produce(self.topic, key=f"k{seq % self.keys}".encode(), value=str(seq).encode(),
                                       on_delivery=functools.partial(self._report, seq, time.monotonic()))
                self.sent += 1
            except BufferError:
                pass
            self._producer.poll(self.interval)

    def start(self) -> Writer:
        self._thread.start()
        return self

    def acked_since(self, partition: int | None, since: float) -> int:
        """Acknowledged writes produced at or after `since` (not earlier writes that were in flight)."""
        return sum(1 for p, _, _, sent, _ in list(self.acked) if sent >= since and partition in (None, p))

    def first_ack_after(self, partition: int, since: float) -> float:
        """Seconds from `since` to the acknowledgement of the first write to `partition` produced after it."""
        return min(at for p, _, _, sent, at in list(self.acked) if p == partition and sent >= since) - since

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        self._thread.join(10)
        left = self._producer.flush(timeout)
        assert left == 0, f"{left} writes neither acknowledged nor failed after {timeout} s"


def consume_all(bootstrap: str, topic: str, timeout: float = 30) -> dict[int, list[tuple[int, int]]]:
    """Every record of the topic, per partition, as (offset, seq), read up to each partition's high watermark."""
    partitions = sorted(describe(bootstrap, topic))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    got: dict[int, list[tuple[int, int]]] = {p: [] for p in partitions}
    deadline = time.monotonic() + timeout
    try:
        while any(got[p][-1][0] + 1 < ends[p] if got[p] else ends[p] > 0 for p in partitions):
            assert time.monotonic() < deadline, f"read {[len(v) for v in got.values()]} of ends {ends} in {timeout} s"
            for m in consumer.consume(500, 0.5):
                if m.error() is None:
                    got[int(m.partition() or 0)].append((int(m.offset() or 0), int(m.value() or b"-1")))
    finally:
        consumer.close()
    return got


def _batches(data_dir: Path, topic: str, partition: int) -> Iterator[BatchHeader]:
    """The batch headers of a node's partition, from its segment files (Kafka's on-disk format: the same for
    our broker and for the Apache Kafka reference)."""
    for log in sorted((data_dir / f"{topic}-{partition}").glob("*.log")):
        fd = os.open(log, os.O_RDONLY)
        try:
            yield from scan(fd, 0, os.fstat(fd).st_size, verify=False)
        finally:
            os.close(fd)


def producer_epochs(data_dir: Path, topic: str, partition: int, offsets: Iterable[int]) -> dict[int, int]:
    """The producer epoch of the batch holding each offset, read from a node's segment files."""
    wanted, found = set(offsets), {}
    for header in _batches(data_dir, topic, partition):
        last = header.base_offset + header.last_offset_delta
        found.update({o: header.producer_epoch for o in wanted if header.base_offset <= o <= last})
    return found


def batches_around(data_dir: Path, topic: str, partition: int, first: int, last: int) -> list[str]:
    """The batches of a node's segment files that hold offsets first..last: offsets, leader epoch, producer
    id and epoch, base sequence (to tell a client's re-send from a broker's reordering after a failure)."""
    return [f"{h.base_offset}-{h.base_offset + h.last_offset_delta} leader epoch {h.leader_epoch} "
            f"producer {h.producer_id}/{h.producer_epoch} seq {h.base_sequence}"
            for h in _batches(data_dir, topic, partition)
            if h.base_offset <= last and h.base_offset + h.last_offset_delta >= first]


# Where a duplicate may come from the client and not the broker. librdkafka (issue 4953: "Sporadic message
# duplication during leader transition with idempotent producer", confirmed by its maintainers) bumps the
# producer epoch of the whole idempotent producer when a pipelined request on one partition gets
# OUT_OF_ORDER_SEQUENCE_NUMBER because the request before it failed; a write on another partition whose send
# was "possibly persisted" (its leader killed before answering) is then sent again under the new epoch with
# sequence 0, which no broker can tell from a new write. Apache Kafka's broker writes it twice too.
EpochsOf = Callable[[int, list[int]], dict[int, int]]


def check_exactly_once_in_order(acked: list[Ack], got: dict[int, list[tuple[int, int]]],
                                epochs: EpochsOf | None = None,
                                explain: Callable[[int, int, int], str] | None = None) -> list[str]:
    """Every acknowledged write is in the log once, at the offset its acknowledgement named (one acknowledged
    without an offset, `Ack` above: in its partition); each partition holds its writes in the order they were
    produced (seq increasing); no write appears twice.

    With `epochs` (partition, offsets -> producer epoch of each), a write stored again by a later producer
    epoch of the same partition (the client's re-send after an epoch bump, above) is reported, not failed;
    a write stored twice within one producer epoch (the broker's idempotence failing) always fails.
    `explain` (partition, first offset, last offset -> text) is added to an out-of-order failure.
    Returns the reports."""
    where: dict[int, list[tuple[int, int]]] = {}
    for p, records in got.items():
        for offset, seq in records:
            where.setdefault(seq, []).append((p, offset))
    twice = {seq: places for seq, places in where.items() if len(places) > 1}
    reports, resent = [], {}  # resent: (partition, offset) of a re-sent write's earlier copy -> its last copy
    for seq, places in sorted(twice.items()):
        partitions = {p for p, _ in places}
        if epochs is None or len(partitions) > 1:
            continue
        offsets = sorted(o for _, o in places)
        stamped = epochs(places[0][0], offsets)
        epochs_in_order = [stamped.get(o, -1) for o in offsets]  # -1: not found, never counted as a re-send
        if -1 not in epochs_in_order and all(a < b for a, b in itertools.pairwise(epochs_in_order)):
            reports.append(f"write {seq} stored again by the client's re-send under a bumped producer epoch: "
                           f"partition {places[0][0]} offsets {offsets}, producer epochs {epochs_in_order}")
            resent.update({(places[0][0], o): offsets[-1] for o in offsets[:-1]})
            del where[seq]
    broker_twice = {seq: where[seq] for seq in twice if seq in where}
    assert not broker_twice, (f"{len(broker_twice)} writes appear more than once, (partition, offset) each: "
                              f"{sorted(broker_twice.items())[:5]}")
    for p, all_records in got.items():
        # A re-sent batch of several writes is in the log twice, [5, 6, 5, 6]: the order that must hold is the
        # one of the copies the client was answered for (the last ones), and between a write's two copies
        # stands only the re-sent block (earlier copies, or the last copies of re-sent writes).
        seq_at = dict(all_records)
        lasts = {o: last for (q, o), last in resent.items() if q == p}
        repeated = {seq_at.get(last) for last in lasts.values()}
        for offset, last in lasts.items():
            stray = [o for o in range(offset + 1, last) if o in seq_at and o not in lasts and seq_at[o] not in repeated]
            assert not stray, (f"partition {p}: write {seq_at[stray[0]]} at offset {stray[0]} stands between the two "
                               f"copies of re-sent write {seq_at[offset]} (offsets {offset} and {last}): not a re-send")
        records = [(offset, seq) for offset, seq in all_records if (p, offset) not in resent]
        inversions = [(a, b) for a, b in itertools.pairwise(records) if a[1] > b[1]]
        if inversions:
            (o1, s1), (o2, s2) = inversions[0]
            stamped = epochs(p, [o1, o2]) if epochs else {}
            raise AssertionError(
                f"partition {p} is out of produce order at {len(inversions)} places; first: write {s1} at offset "
                f"{o1} (producer epoch {stamped.get(o1)}) before write {s2} at offset {o2} (epoch {stamped.get(o2)}); "
                f"records around it: {records[max(0, records.index((o1, s1)) - 5):records.index((o1, s1)) + 6]}"
                + (f"; {explain(p, o1 - 5, o2 + 5)}" if explain else ""))
    stored = {(p, offset, seq) for p, records in got.items() for offset, seq in records}
    in_partition = {(p, seq) for p, records in got.items() for _, seq in records}
    missing = [(p, o, s) for p, o, s, *_ in acked
               if ((p, s) not in in_partition if o is None else (p, o, s) not in stored)]
    assert not missing, f"{len(missing)} acknowledged writes lost or moved, e.g. {missing[:5]}"
    return reports
