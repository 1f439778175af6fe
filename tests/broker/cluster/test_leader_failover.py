"""Issue 5, must show: 3 nodes, RF 3, min.insync.replicas 2, an idempotent acks=all producer writing keyed
records continuously while the leader of each partition is killed -9 and restarted, several times: afterwards
every acknowledged write is in the log exactly once, at its acknowledged offset, in produce order per partition.
Also: killing the active controller hands the quorum to another node and moves its partitions' leadership."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from tests.broker.cluster.clients import (
    PRODUCER,
    Writer,
    check_exactly_once_in_order,
    consume_all,
    create_topic,
    describe,
    new_topic_name,
    wait_full_isr,
)  # fmt: skip
from tests.broker.cluster.harness import Cluster, until

ROUNDS = 3  # one kill per partition; the leader of each partition is killed once, some nodes twice or more


def test_killing_partition_leaders_loses_no_acknowledged_write(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=3)
    writer = Writer(cluster.bootstrap, topic).start()
    try:
        until(lambda: len(writer.acked) >= 100, 30, "first acknowledgements")
        for round_ in range(ROUNDS):
            _kill_and_restart_leader(cluster, writer, topic, round_ % 3, round_)
    finally:
        writer.stop()
    assert not writer.failed, f"writes failed instead of waiting out the failover: {writer.failed[:5]}"
    got = consume_all(cluster.bootstrap, topic)
    assert sum(len(v) for v in got.values()) >= len(writer.acked) > 300
    check_exactly_once_in_order(writer.acked, got)


def _kill_and_restart_leader(cluster: Cluster, writer: Writer, topic: str, partition: int, round_: int) -> None:
    leader = describe(cluster.bootstrap, topic)[partition].leader
    killed_at = time.monotonic()
    cluster.kill(leader)
    live = cluster.bootstrap_of([n for n in cluster.node_ids if n != leader])
    until(lambda: describe(live, topic)[partition].leader not in (leader, -1), 30,
          f"round {round_}: a new leader for partition {partition} after node {leader} died")
    until(lambda: writer.acked_since(partition, killed_at) >= 20, 30,
          f"round {round_}: acknowledged writes to partition {partition} after the failover")
    print(f"{cluster.name}: round {round_}, partition {partition}: node {leader} killed, writes acknowledged "
          f"again after {writer.first_ack_after(partition, killed_at):.2f} s")
    cluster.restart(leader)
    wait_full_isr(cluster.bootstrap, topic)  # the next kill must leave two in-sync replicas


def test_killing_the_active_controller_elects_a_new_one_and_moves_its_leaderships(cluster: Cluster) -> None:
    controller = int(until(cluster.active_controller, 30, "an active controller"))  # type: ignore[call-overload]
    topic = new_topic_name()
    leaders = {p: s.leader for p, s in create_topic(cluster.bootstrap, topic, partitions=3).items()}
    assert sorted(leaders.values()) == cluster.node_ids, f"leadership not spread over the nodes: {leaders}"
    moved_p = next(p for p, leader in leaders.items() if leader == controller)  # led by the controller's node
    others = {p: leader for p, leader in leaders.items() if p != moved_p}
    producer = Producer({"bootstrap.servers": cluster.bootstrap, **PRODUCER})
    producer.produce(topic, b"before", partition=moved_p)
    assert producer.flush(30) == 0
    live = cluster.bootstrap_of([n for n in cluster.node_ids if n != controller])

    killed_at = time.monotonic()
    cluster.kill(controller)
    new = until(lambda: (c := cluster.active_controller()) not in (None, controller) and c, 30, "a new controller")
    elected = time.monotonic() - killed_at
    until(lambda: describe(live, topic)[moved_p].leader not in (controller, -1), 30,
          "a new leader for the dead controller's partition")
    moved = time.monotonic() - killed_at
    acked: list[float] = []
    producer.produce(topic, b"after", partition=moved_p,
                     on_delivery=lambda e, m: acked.append(time.monotonic()) if e is None else None)
    assert producer.flush(30) == 0 and acked, "no acks=all write to the moved partition"
    print(f"{cluster.name}: controller {controller} killed -> controller {new} after {elected:.2f} s, its partition "
          f"led by a live node after {moved:.2f} s, first write acknowledged after {acked[0] - killed_at:.2f} s")
    state = describe(live, topic)
    # The new leader came from the ISR, and the dead node was fenced out of it.
    assert state[moved_p].leader in state[moved_p].isr and controller not in state[moved_p].isr
    assert {p: state[p].leader for p in others} == others  # partitions led by live nodes keep their leaders
    assert elected < 15 and moved < 20
