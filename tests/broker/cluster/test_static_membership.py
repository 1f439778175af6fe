"""Issue 14: static membership (KIP-345). A consumer with a `group.instance.id` that restarts inside its session
timeout takes its old place back: the coordinator answers its JoinGroup at once with the current generation and
its old assignment, and the other members see no rebalance. A second live member with the same instance id fences
the first (FENCED_INSTANCE_ID); an administrator removes a departed static member by its instance id (LeaveGroup
v3+, as Admin.removeMembersFromConsumerGroup sends it).

`LAKEFEED_CLUSTER_TESTS=kafka` runs these against Apache Kafka 4.3: the expectations are Kafka's."""

from __future__ import annotations

import concurrent.futures
import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity

from lakefeed_testing.kafka_reference import run_kafka_tool
from tests.broker.cluster.clients import create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until
from tests.broker.cluster.test_coordinator import _coordinator
from tests.broker.kio_wire import roundtrip

SESSION_MS = 30_000  # far longer than any step here: only a rebalance, never an expiry, could move partitions
_OPEN: list[Consumer] = []


@pytest.fixture(autouse=True)
def _close_consumers() -> Iterator[None]:
    yield
    while _OPEN:
        with contextlib.suppress(RuntimeError):  # already closed by the test
            _OPEN.pop().close()


@dataclass
class Member:
    """A confluent-kafka static member that records its rebalance callbacks and errors."""

    instance: str
    consumer: Consumer
    events: list[tuple[str, float, frozenset[int]]] = field(default_factory=list)
    errors: list[KafkaError] = field(default_factory=list)

    def partitions(self) -> frozenset[int]:
        return frozenset(p.partition for p in self.consumer.assignment())


def _member(bootstrap: str, group: str, topic: str, instance: str) -> Member:
    errors: list[KafkaError] = []
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
        "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "partition.assignment.strategy": "range", "error_cb": errors.append,
    })  # fmt: skip
    _OPEN.append(consumer)
    member = Member(instance, consumer, errors=errors)

    def record(kind: str) -> object:
        return lambda _c, ps: member.events.append((kind, time.monotonic(), frozenset(p.partition for p in ps)))

    consumer.subscribe([topic], on_assign=record("assign"), on_revoke=record("revoke"))
    return member


def _pump(members: list[Member], until_true: object = None, timeout: float = 30.0, what: str = "") -> None:
    """Poll every member for `timeout` s, or until `until_true()` holds (then fail if it never does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            message = m.consumer.poll(0.02)
            if message is not None and message.error() is not None:
                m.errors.append(message.error())
        if callable(until_true) and until_true():
            return
    if callable(until_true):
        raise AssertionError(f"{what}: not within {timeout:.0f} s; " + ", ".join(
            f"{m.instance}: {sorted(m.partitions())} events={m.events} errors={m.errors}" for m in members))


def _fenced(error: KafkaError) -> bool:
    """librdkafka turns FENCED_INSTANCE_ID into a fatal error that names it."""
    return "fenced by other consumer with same group.instance.id" in str(error)


def _stable(members: list[Member], partitions: int) -> bool:
    owned = [m.partitions() for m in members]
    return all(owned) and sorted(p for o in owned for p in o) == list(range(partitions))


def _topic(cluster: Cluster, partitions: int) -> str:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=partitions)
    return topic


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(cluster: Cluster) -> None:
    topic = _topic(cluster, 4)
    group = f"g-{topic}"
    a, b = _member(cluster.bootstrap, group, topic, "a"), _member(cluster.bootstrap, group, topic, "b")
    _pump([a, b], lambda: _stable([a, b], 4), 60, "both static members assigned")
    _pump([a, b], timeout=1.0)  # let a trailing callback land before counting
    a_events, b_partitions = list(a.events), b.partitions()
    b.consumer.close()  # a static member sends no LeaveGroup (KIP-345): the coordinator keeps its place
    started = time.monotonic()
    b2 = _member(cluster.bootstrap, group, topic, "b")
    _pump([a, b2], lambda: bool(b2.partitions()), 30, "the restarted member assigned")
    took = time.monotonic() - started
    _pump([a, b2], timeout=3.0)  # a rebalance of the others would show up here
    assert b2.partitions() == b_partitions, (b2.events, b_partitions)
    assert a.events == a_events, f"the other member was rebalanced: {a.events[len(a_events):]}"
    assert [kind for kind, _, _ in b2.events] == ["assign"], b2.events
    # Apache Kafka 4.3 answers within ~0.2 s here; the bound leaves room for a loaded CI machine.
    assert took < 2.0, f"the restarted static member waited {took:.2f} s for its partitions"
    assert not a.errors and not b2.errors, (a.errors, b2.errors)


def test_a_second_member_with_the_same_instance_id_fences_the_first(cluster: Cluster) -> None:
    topic = _topic(cluster, 2)
    group = f"g-{topic}"
    first = _member(cluster.bootstrap, group, topic, "dup")
    _pump([first], lambda: _stable([first], 2), 60, "first member assigned")
    second = _member(cluster.bootstrap, group, topic, "dup")
    _pump([first, second], lambda: any(_fenced(e) for e in first.errors), 30, "first member fenced")
    _pump([second], lambda: _stable([second], 2), 30, "the new owner of the instance id assigned")
    assert not any(_fenced(e) for e in second.errors), second.errors


def test_an_administrator_removes_a_departed_static_member_by_instance_id(cluster: Cluster) -> None:
    topic = _topic(cluster, 2)
    group = f"g-{topic}"
    a, b = _member(cluster.bootstrap, group, topic, "a"), _member(cluster.bootstrap, group, topic, "b")
    _pump([a, b], lambda: _stable([a, b], 2), 60, "both static members assigned")
    b.consumer.close()  # gone for good, but its session (30 s) would keep its partitions unread
    _, coordinator = until(lambda: (c := _coordinator(cluster.ports[cluster.node_ids[0]], group))[0] == 0 and c,
                              30, "FindCoordinator")  # type: ignore[misc]
    request = LeaveGroupRequest(group_id=group, members=(
        MemberIdentity(member_id="", group_instance_id="b", reason="removed by an administrator"),
        MemberIdentity(member_id="", group_instance_id="never-joined", reason=None),
    ))  # fmt: skip
    _, answer = roundtrip(cluster.ports[coordinator], 13, 5, request)
    assert answer.error_code == ErrorCode.none
    assert [(m.group_instance_id, m.error_code) for m in answer.members] == [
        ("b", ErrorCode.none), ("never-joined", ErrorCode.unknown_member_id)]
    _pump([a], lambda: _stable([a], 2), 20, "the remaining member takes every partition")
    _, described = roundtrip(cluster.ports[coordinator], 15, 5,
                             DescribeGroupsRequest(groups=(group,), include_authorized_operations=False))
    (state,) = described.groups
    assert (state.group_state, [m.group_instance_id for m in state.members]) == ("Stable", ["a"]), state


def _console_consumer(cluster: Cluster, topic: str, group: str, messages: int) -> subprocess.CompletedProcess[str]:
    return run_kafka_tool(
        "kafka-console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic", topic, "--group", group,
        "--from-beginning", "--max-messages", str(messages), "--timeout-ms", "60000",
        "--consumer-property", "group.instance.id=java-1", "--consumer-property", f"session.timeout.ms={SESSION_MS}",
        "--consumer-property", "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor",
        "--formatter-property", "print.partition=true", timeout=120,
    )  # fmt: skip


def _produce(cluster: Cluster, topic: str, prefix: str, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for p in (0, 1):
        for i in range(per_partition):
            producer.produce(topic, f"{prefix}-{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def _consumed(result: subprocess.CompletedProcess[str]) -> list[tuple[int, str]]:
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines() if line.startswith("Partition:")]
    return [(int(r[0].removeprefix("Partition:")), r[-1]) for r in rows]


def test_a_java_consumer_restarts_with_its_instance_id_and_kafka_consumer_groups_shows_it(cluster: Cluster) -> None:
    topic = _topic(cluster, 2)
    group = f"g-{topic}"
    _produce(cluster, topic, "first", 5)
    a = _member(cluster.bootstrap, group, topic, "a")
    _pump([a], lambda: _stable([a], 2), 60, "the confluent member assigned")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        run = pool.submit(_console_consumer, cluster, topic, group, 5)
        _pump([a], run.done, 150, "first run of the Java consumer")
        first = _consumed(run.result())
        java_partitions = {p for p, _ in first}
        assert len(java_partitions) == 1 and first == [(p, f"first-{p}-{i}") for p, _ in first[:1] for i in range(5)]
        _pump([a], lambda: a.partitions() == {0, 1} - java_partitions, 10, "a holds the other partition")
        a_events = list(a.events)
        _produce(cluster, topic, "second", 3)
        # Exited without LeaveGroup (a static member): the second run takes the same place and partition.
        run = pool.submit(_console_consumer, cluster, topic, group, 3)
        _pump([a], run.done, 150, "second run of the Java consumer")
        (p,) = java_partitions
        assert _consumed(run.result()) == [(p, f"second-{p}-{i}") for i in range(3)]
    _pump([a], timeout=2.0)
    assert a.events == a_events, f"the confluent member was rebalanced: {a.events[len(a_events):]}"
    result = run_kafka_tool("kafka-consumer-groups", "--bootstrap-server", cluster.bootstrap, "--describe",
                            "--group", group, "--members", timeout=90)
    assert result.returncode == 0, result.stderr[-3000:]
    header, *rows = [line.split() for line in result.stdout.splitlines() if line.split()[:1] in (["GROUP"], [group])]
    column = header.index("GROUP-INSTANCE-ID")
    assert sorted(r[column] for r in rows) == ["a", "java-1"], result.stdout


def test_static_members_keep_their_places_when_the_coordinator_is_killed(cluster: Cluster) -> None:
    """The stored group names each member's instance id: after the coordinator's kill -9 its successor lets a
    restarted static member replace its old member id without rebalancing the others."""
    topic = _topic(cluster, 4)
    group = f"g-{topic}"
    a, b = _member(cluster.bootstrap, group, topic, "a"), _member(cluster.bootstrap, group, topic, "b")
    _pump([a, b], lambda: _stable([a, b], 4), 60, "both static members assigned")
    _pump([a, b], timeout=1.0)
    a_events, b_partitions = list(a.events), b.partitions()
    _, coordinator = until(lambda: (c := _coordinator(cluster.ports[cluster.node_ids[0]], group))[0] == 0 and c,
                           30, "FindCoordinator")  # type: ignore[misc]
    b.consumer.close()
    cluster.kill(coordinator)
    others = [n for n in cluster.node_ids if n != coordinator]
    until(lambda: (c := _coordinator(cluster.ports[others[0]], group))[0] == 0 and c[1] != coordinator, 30,
          "a new coordinator")
    b2 = _member(cluster.bootstrap_of(others), group, topic, "b")
    _pump([a, b2], lambda: bool(b2.partitions()), 60, "the restarted member assigned by the new coordinator")
    _pump([a, b2], timeout=3.0)
    assert b2.partitions() == b_partitions, (b2.events, b_partitions)
    assert a.events == a_events, f"the other member was rebalanced: {a.events[len(a_events):]}"
