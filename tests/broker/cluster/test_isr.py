"""Issue 5, must show: a SIGSTOPped follower leaves the ISR within about replica.lag.time.max.ms and rejoins
after SIGCONT; with two of a partition's three replicas down an acks=all produce is refused with
NOT_ENOUGH_REPLICAS (never silently accepted), and after the restart nothing acknowledged is lost."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer

from tests.broker.cluster.clients import (
    Writer,
    check_exactly_once_in_order,
    consume_all,
    create_topic,
    describe,
    new_topic_name,
    wait_full_isr,
)
from tests.broker.cluster.conftest import TARGET
from tests.broker.cluster.harness import LAG_MS, Cluster, start_cluster, until


def test_a_stopped_follower_leaves_the_isr_and_rejoins_after_sigcont(cluster: Cluster) -> None:
    topic = new_topic_name()
    state = create_topic(cluster.bootstrap, topic, partitions=1)[0]
    controller = cluster.active_controller()
    followers = [n for n in state.replicas if n != state.leader]
    follower = next((n for n in followers if n != controller), followers[0])  # keep the quorum's leader running
    live = cluster.bootstrap_of([n for n in cluster.node_ids if n != follower])
    writer = Writer(cluster.bootstrap, topic, interval=0.01).start()  # a follower lags only behind new writes
    try:
        until(lambda: len(writer.acked) >= 20, 30, "first acknowledgements")
        stopped_at = time.monotonic()
        cluster.pause(follower)
        try:
            until(lambda: follower not in describe(live, topic)[0].isr, 30, f"node {follower} out of the ISR")
            left = time.monotonic() - stopped_at
            out_at = time.monotonic()
            until(lambda: writer.acked_since(0, out_at) >= 10, 15,
                  "acks=all writes acknowledged by the two remaining in-sync replicas")
        finally:
            cluster.resume(follower)
        resumed_at = time.monotonic()
        until(lambda: follower in describe(cluster.bootstrap, topic)[0].isr, 30, f"node {follower} back in the ISR")
        rejoined = time.monotonic() - resumed_at
    finally:
        writer.stop()
    print(f"{cluster.name}: SIGSTOPped follower {follower} left the ISR after {left:.2f} s "
          f"(replica.lag.time.max.ms={LAG_MS}), rejoined {rejoined:.2f} s after SIGCONT")
    # Detection needs the lag itself plus the leader's periodic ISR check and the controller's commit.
    assert left <= 3 * LAG_MS / 1000 + 2
    assert not writer.failed
    check_exactly_once_in_order(writer.acked, consume_all(cluster.bootstrap, topic))


def _produce_acks_all(
    bootstrap: str, topic: str, values: list[str], partition: int = 0, **config: object
) -> list[tuple[str, object]]:
    """(value, offset) for every acknowledged write, (value, KafkaError) for every refused one. retries=0, so a
    refusal reports the broker's own error code instead of a local timeout."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False, "retries": 0,
                         "request.timeout.ms": 5000, "message.timeout.ms": 8000, **config})
    results: list[tuple[str, object]] = []

    def report(value: str, error: KafkaError | None, message: Message) -> None:
        results.append((value, error if error is not None else message.offset()))

    for value in values:
        producer.produce(topic, value.encode(), partition=partition, on_delivery=functools.partial(report, value))
    assert producer.flush(20) == 0
    return results


def _refusals(results: list[tuple[str, object]]) -> list[int]:
    accepted = [v for v, outcome in results if not isinstance(outcome, KafkaError)]
    assert not accepted, f"acks=all writes accepted with too few replicas: {accepted}"
    return [outcome.code() for _, outcome in results if isinstance(outcome, KafkaError)]


def _check_kept(bootstrap: str, topic: str, acked: list[tuple[str, object]], partition: int = 0) -> None:
    got = {offset: seq for offset, seq in consume_all(bootstrap, topic)[partition]}
    lost = [(value, offset) for value, offset in acked if not isinstance(offset, int) or got.get(offset) != int(value)]
    assert not lost, f"acknowledged writes lost after the restart: {lost[:5]}"


def test_two_of_three_nodes_down_refuses_acks_all_and_loses_nothing(cluster: Cluster) -> None:
    """All three nodes vote, so with two down the quorum is gone too: no ISR change can be committed, and
    (as in Kafka) the leader cannot acknowledge an acks=all write: it must fail, with NOT_ENOUGH_REPLICAS or,
    when the ISR still lists the dead followers, a timeout."""
    topic = new_topic_name()
    state = create_topic(cluster.bootstrap, topic, partitions=1)[0]
    acked = _produce_acks_all(cluster.bootstrap, topic, [str(i) for i in range(100)])
    assert len(acked) == 100 and not any(isinstance(o, KafkaError) for _, o in acked)
    down = [n for n in state.replicas if n != state.leader]
    for node in down:
        cluster.kill(node)
    codes = _refusals(_produce_acks_all(cluster.bootstrap_of([state.leader]), topic,
                                        [str(i) for i in range(100, 110)]))
    allowed = {KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
               KafkaError.REQUEST_TIMED_OUT, KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT}
    assert len(codes) == 10 and set(codes) <= allowed, codes
    for node in down:
        cluster.restart(node)
    cluster.wait_formed()
    wait_full_isr(cluster.bootstrap, topic)
    later = _produce_acks_all(cluster.bootstrap, topic, [str(i) for i in range(110, 130)], retries=5)
    assert not any(isinstance(o, KafkaError) for _, o in later)
    _check_kept(cluster.bootstrap, topic, acked + later)


@pytest.fixture(scope="module")
def cluster4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Nodes 1-3 vote, node 4 is broker-only: two replicas can die while the quorum keeps its majority."""
    root: Path = tmp_path_factory.mktemp("cluster4")
    with start_cluster(TARGET, root, 4) as four:
        yield four


def test_isr_of_one_refuses_acks_all_with_not_enough_replicas(cluster4: Cluster) -> None:
    topic = new_topic_name()
    state = create_topic(cluster4.bootstrap, topic, partitions=4)
    # A partition with node 4 (broker-only) among its followers: killing its two followers downs one voter.
    partition, target = next((p, s) for p, s in state.items() if 4 in s.replicas and s.leader != 4)
    down = [n for n in target.replicas if n != target.leader]
    live = cluster4.bootstrap_of([n for n in cluster4.node_ids if n not in down])
    acked = _produce_acks_all(cluster4.bootstrap, topic, [str(i) for i in range(50)], partition)
    assert not any(isinstance(o, KafkaError) for _, o in acked)
    for node in down:
        cluster4.kill(node)  # two voters remain: the controller fences both and shrinks the ISR to the leader
    until(lambda: describe(live, topic)[partition].isr == [target.leader], 30, "ISR shrunk to the leader alone")
    codes = _refusals(_produce_acks_all(live, topic, [str(i) for i in range(50, 60)], partition))
    assert codes == [KafkaError.NOT_ENOUGH_REPLICAS] * 10  # refused before the append: nothing written
    for node in down:
        cluster4.restart(node)
    wait_full_isr(cluster4.bootstrap, topic)
    later = _produce_acks_all(cluster4.bootstrap, topic, [str(i) for i in range(60, 80)], partition, retries=5)
    assert not any(isinstance(o, KafkaError) for _, o in later)
    _check_kept(cluster4.bootstrap, topic, acked + later, partition)
    got = [seq for _, seq in consume_all(cluster4.bootstrap, topic)[partition]]
    assert got == [*range(50), *range(60, 80)]  # the refused writes are nowhere
