from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.controller.raft import (
    AppendEntries,
    Entry,
    MemoryStorage,
    NotLeader,
    RaftNode,
    RequestVote,
    VoteReply,
)
from broker.controller.raft_storage import FileStorage
from broker.controller.simnet import SimNetwork


def committed(net: SimNetwork, v: int) -> list[object]:
    n = net.nodes[v]
    return [e.data for e in n.log[: n.commit_index] if e.data is not None]


def test_elects_one_leader_and_replicates() -> None:
    net = SimNetwork([1, 2, 3], seed=1)
    lead = net.run_until_leader()
    for i in range(5):
        net.nodes[lead].propose({"n": i})
    net.step(300)
    for v in (1, 2, 3):
        assert committed(net, v) == [{"n": i} for i in range(5)]


def test_minority_leader_cannot_commit_and_majority_elects_new_leader() -> None:
    net = SimNetwork([1, 2, 3], seed=2)
    old = net.run_until_leader()
    others = {1, 2, 3} - {old}
    net.partition({old}, others)
    idx = net.nodes[old].propose("lost")
    net.step(1000)
    assert net.nodes[old].commit_index < idx  # no majority: never committed
    new = max(others, key=lambda v: net.nodes[v].term if net.nodes[v].role == "leader" else -1)
    assert net.nodes[new].role == "leader" and net.nodes[new].term > net.nodes[old].term
    net.nodes[new].propose("kept")
    net.heal()
    net.step(1000)
    for v in (1, 2, 3):
        assert committed(net, v) == ["kept"]  # the old leader truncated its uncommitted suffix


def test_stale_term_messages_are_rejected() -> None:
    node = RaftNode(1, [1, 2, 3], MemoryStorage(term=5))
    out = node.receive(AppendEntries(4, 2, 0, 0, (Entry(4, "x"),), 1))
    assert out[0].message.term == 5 and not out[0].message.success  # type: ignore[union-attr]
    assert node.log == []
    out = node.receive(RequestVote(4, 2, 10, 4))
    assert not out[0].message.granted  # type: ignore[union-attr]


def test_vote_requires_up_to_date_log_and_one_vote_per_term() -> None:
    node = RaftNode(1, [1, 2, 3], MemoryStorage(term=1, log=[Entry(1, "a"), Entry(1, "b")]))
    assert not node.receive(RequestVote(2, 2, 1, 1))[0].message.granted  # type: ignore[union-attr]
    assert node.receive(RequestVote(2, 3, 2, 1))[0].message.granted  # type: ignore[union-attr]
    assert not node.receive(RequestVote(2, 2, 5, 1))[0].message.granted  # type: ignore[union-attr]


def test_a_node_cut_off_for_long_does_not_depose_the_leader_when_it_returns() -> None:
    net = SimNetwork([1, 2, 3], seed=4)
    lead = net.run_until_leader()
    term = net.nodes[lead].term
    loner = next(v for v in (1, 2, 3) if v != lead)
    net.partition({loner}, {1, 2, 3} - {loner})
    net.step(5000)  # many election timeouts: without pre-vote its term would be far ahead by now
    assert net.nodes[loner].term == term
    net.heal()
    net.step(1000)
    assert net.leader() == lead and net.nodes[lead].term == term
    net.nodes[lead].propose("after")
    net.step(300)
    assert committed(net, loner) == ["after"]


def test_pre_vote_changes_no_term_and_is_refused_while_a_leader_is_heard() -> None:
    node = RaftNode(1, [1, 2, 3], MemoryStorage(term=3))
    reply = node.receive(RequestVote(4, 2, 0, 0, pre_vote=True))[0].message
    assert isinstance(reply, VoteReply) and reply.pre_vote and reply.granted and node.term == 3
    assert node.voted_for is None  # a pre-vote is no vote
    node.receive(AppendEntries(3, 3, 0, 0, (), 0))  # node 3 leads term 3 and was just heard
    reply = node.receive(RequestVote(4, 2, 0, 0, pre_vote=True))[0].message
    assert isinstance(reply, VoteReply) and not reply.granted and node.term == 3


def test_propose_on_follower_names_the_leader() -> None:
    net = SimNetwork([1, 2, 3], seed=3)
    lead = net.run_until_leader()
    net.step(100)
    follower = next(v for v in (1, 2, 3) if v != lead)
    with pytest.raises(NotLeader) as e:
        net.nodes[follower].propose("x")
    assert e.value.leader == lead


def test_file_storage_persists_term_vote_and_log(tmp_path: Path) -> None:
    s = FileStorage(tmp_path)
    s.save_state(7, 2)
    s.truncate_and_append(1, [Entry(1, {"a": 1}), Entry(2, None), Entry(2, "c")])
    s.truncate_and_append(3, [Entry(7, "d")])
    with open(tmp_path / "log.jsonl", "a") as f:
        f.write('{"t": 7, "d"')  # torn write of an unacknowledged entry
    term, vote, log = FileStorage(tmp_path).load()
    assert (term, vote) == (7, 2)
    assert log == [Entry(1, {"a": 1}), Entry(2, None), Entry(7, "d")]
    node = RaftNode(1, [1, 2, 3], FileStorage(tmp_path))
    assert node.term == 7 and node.voted_for == 2 and node.last_index == 3


def test_cluster_survives_restarts_with_file_storage(tmp_path: Path) -> None:
    net = SimNetwork([1, 2, 3], seed=4)
    for v in (1, 2, 3):
        net.storages[v] = FileStorage(tmp_path / str(v))  # type: ignore[assignment]
        net.start(v)
    lead = net.run_until_leader()
    net.nodes[lead].propose("one")
    net.step(300)
    for v in (1, 2, 3):
        net.crash(v)
    for v in (1, 2, 3):
        net.start(v)
    lead = net.run_until_leader()
    net.nodes[lead].propose("two")
    net.step(300)
    for v in (1, 2, 3):
        assert committed(net, v) == ["one", "two"]


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    events=st.lists(st.tuples(st.sampled_from(["propose", "crash", "restart", "split", "heal"]), st.integers(1, 5)),
                    min_size=5, max_size=25),
)
def test_safety_under_crashes_partitions_and_drops(seed: int, events: list[tuple[str, int]]) -> None:
    """Election safety, log matching and state-machine safety under a random fault schedule."""
    voters = [1, 2, 3, 4, 5]
    net = SimNetwork(voters, seed=seed, drop_rate=0.1)
    leaders_by_term: dict[int, int] = {}
    committed_prefix: list[object] = []
    counter = 0
    for kind, arg in events:
        if kind == "propose":
            lead = net.leader()
            if lead is not None:
                counter += 1
                net.nodes[lead].propose(counter)
        elif kind == "crash" and len(net.down) < 2:
            net.crash(arg)
        elif kind == "restart":
            if arg in net.down:
                net.start(arg)
        elif kind == "split":
            net.partition(set(voters[:arg]), set(voters[arg:]))
        else:
            net.heal()
        for _ in range(100):
            net.step()
            for v, n in net.nodes.items():
                if n.role == "leader" and v not in net.down:
                    assert leaders_by_term.setdefault(n.term, v) == v  # at most one leader per term
        logs = {v: net.nodes[v] for v in voters}
        for a in logs.values():  # log matching: same index and term => same prefix
            for b in logs.values():
                for i in range(min(a.last_index, b.last_index), 0, -1):
                    if a.term_at(i) == b.term_at(i):
                        assert a.log[:i] == b.log[:i]
                        break
        for v in voters:  # committed entries never change
            c = committed(net, v)
            short = min(len(c), len(committed_prefix))
            assert c[:short] == committed_prefix[:short]
            if len(c) > len(committed_prefix):
                committed_prefix = c
    net.heal()
    for v in list(net.down):
        net.start(v)
    # A proposal may be lost if leadership changes before it commits (drops continue): retry.
    for _ in range(10):
        lead = net.run_until_leader()
        net.nodes[lead].propose("final")
        net.step(500)
        if "final" in committed(net, lead):
            break
    net.step(1500)
    lead = net.run_until_leader()
    final = committed(net, lead)
    assert final[: len(committed_prefix)] == committed_prefix and final[-1] == "final"
    for v in voters:
        assert committed(net, v) == final
