from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.controller.errors import RaftStorageError
from broker.controller.raft import (
    AppendEntries,
    AppendReply,
    Entry,
    InstallSnapshot,
    MemoryStorage,
    NotLeader,
    RaftNode,
    RequestVote,
    Snapshot,
    VoteReply,
)
from broker.controller.raft_storage import FileStorage
from broker.controller.simnet import SimNetwork


def committed(net: SimNetwork, v: int) -> list[object]:
    n = net.nodes[v]
    return [e.data for e in n.entries(1, n.commit_index) if e.data is not None]


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
    saved = FileStorage(tmp_path).load()
    assert (saved.term, saved.voted_for, saved.snapshot) == (7, 2, None)
    assert saved.entries == [Entry(1, {"a": 1}), Entry(2, None), Entry(7, "d")]
    node = RaftNode(1, [1, 2, 3], FileStorage(tmp_path))
    assert node.term == 7 and node.voted_for == 2 and node.last_index == 3
    # The torn bytes are gone, so what is appended after the restart is read back whole.
    FileStorage(tmp_path).load()
    node.storage.truncate_and_append(4, [Entry(7, "e")])
    assert FileStorage(tmp_path).load().entries[-1] == Entry(7, "e")


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


class Applier:
    """A state machine per node: the list of committed values. Its snapshot is the list itself."""

    def __init__(self, net: SimNetwork) -> None:
        self.net = net
        self.nodes: dict[int, RaftNode] = {}
        self.values: dict[int, list[object]] = {}

    def applied(self, v: int) -> list[object]:
        node = self.net.nodes[v]
        if self.nodes.get(v) is not node:  # (re)started: the state machine starts empty, then loads
            self.nodes[v], self.values[v] = node, []
        snap = node.snapshot_to_load()
        if snap is not None:
            self.values[v] = list(snap.data)
        self.values[v] += [e.data for _, e in node.committed_entries() if e.data is not None]
        return self.values[v]

    def compact(self, v: int) -> None:
        node = self.net.nodes[v]
        values = self.applied(v)
        node.compact(node.last_applied, list(values))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    events=st.lists(
        st.tuples(st.sampled_from(["propose", "crash", "restart", "split", "heal", "compact"]), st.integers(1, 5)),
        min_size=5, max_size=25),
)
def test_safety_under_crashes_partitions_drops_and_compaction(seed: int, events: list[tuple[str, int]]) -> None:
    """Election safety, log matching and state-machine safety under a random fault schedule, with nodes
    compacting their logs at random points (leaders then bring laggards up with InstallSnapshot)."""
    voters = [1, 2, 3, 4, 5]
    net = SimNetwork(voters, seed=seed, drop_rate=0.1)
    sm = Applier(net)
    leaders_by_term: dict[int, int] = {}
    committed_prefix: list[object] = []
    counter = 0
    for kind, arg in events:
        if kind == "propose":
            lead = net.leader()
            if lead is not None:
                for _ in range(arg):  # several, so that compaction leaves laggards behind the snapshot
                    counter += 1
                    net.nodes[lead].propose(counter)
        elif kind == "crash" and len(net.down) < 2:
            net.crash(arg)
        elif kind == "restart":
            if arg in net.down:
                net.start(arg)
        elif kind == "split":
            net.partition(set(voters[:arg]), set(voters[arg:]))
        elif kind == "compact":  # every live node but `arg` (so logs of different lengths stay around too)
            for v in voters:
                if v not in net.down and v != arg:
                    sm.compact(v)
        else:
            net.heal()
        for _ in range(100):
            net.step()
            for v, n in net.nodes.items():
                if n.role == "leader" and v not in net.down:
                    assert leaders_by_term.setdefault(n.term, v) == v  # at most one leader per term
        logs = {v: net.nodes[v] for v in voters}
        for a in logs.values():  # log matching: same index and term => same entries (where both still hold them)
            for b in logs.values():
                for i in range(min(a.last_index, b.last_index), max(a.snapshot_index, b.snapshot_index), -1):
                    if a.term_at(i) == b.term_at(i):
                        lo = max(a.snapshot_index, b.snapshot_index) + 1
                        assert a.entries(lo, i) == b.entries(lo, i)
                        break
        for v in voters:  # committed entries never change: every state machine extends one history
            c = sm.applied(v)
            short = min(len(c), len(committed_prefix))
            assert c[:short] == committed_prefix[:short]
            if len(c) > len(committed_prefix):
                committed_prefix = list(c)
    net.heal()
    for v in list(net.down):
        net.start(v)
    # A proposal may be lost if leadership changes before it commits (drops continue): retry.
    for _ in range(10):
        lead = net.run_until_leader()
        net.nodes[lead].propose("final")
        net.step(500)
        if "final" in sm.applied(lead):
            break
    net.step(1500)
    lead = net.run_until_leader()
    final = sm.applied(lead)
    assert final[: len(committed_prefix)] == committed_prefix and final[-1] == "final"
    for v in voters:
        assert sm.applied(v) == final


def test_a_lagging_follower_gets_the_snapshot_and_converges() -> None:
    net = SimNetwork([1, 2, 3], seed=5)
    sm = Applier(net)
    lead = net.run_until_leader()
    lagger = next(v for v in (1, 2, 3) if v != lead)
    net.crash(lagger)
    for i in range(20):
        net.nodes[lead].propose(i)
    net.step(300)
    sm.compact(lead)
    leader = net.nodes[lead]
    assert leader.snapshot_index > 5 and leader.log == []  # the entries the lagger needs are gone
    sent: list[object] = []
    send = net.send
    net.send = lambda src, out: (sent.extend(o.message for o in out), send(src, out))[1]  # type: ignore[method-assign]
    net.start(lagger)
    net.nodes[lead].propose("after")
    net.step(500)
    assert any(isinstance(m, InstallSnapshot) for m in sent)
    node = net.nodes[lagger]
    assert node.snapshot_index == leader.snapshot_index and node.commit_index == leader.commit_index
    assert sm.applied(lagger) == sm.applied(lead) == [*range(20), "after"]


def test_install_snapshot_keeps_a_matching_suffix_and_drops_a_conflicting_log() -> None:
    node = RaftNode(1, [1, 2, 3], MemoryStorage(term=2, log=[Entry(1, "a"), Entry(2, "b"), Entry(2, "c")]))
    out = node.receive(InstallSnapshot(2, 2, 2, 2, ["a", "b"]))
    assert out[0].message == AppendReply(2, 1, True, 2)
    assert (node.snapshot_index, node.last_index, node.log, node.commit_index) == (2, 3, [Entry(2, "c")], 2)
    assert node.snapshot_to_load() == Snapshot(2, 2, ["a", "b"])
    assert node.committed_entries() == []  # nothing after the snapshot is committed yet
    other = RaftNode(1, [1, 2, 3], MemoryStorage(term=3, log=[Entry(1, "a"), Entry(1, "x"), Entry(1, "y")]))
    other.receive(InstallSnapshot(3, 2, 2, 3, ["a", "b"]))
    assert (other.snapshot_index, other.last_index, other.log) == (2, 2, [])  # entry 2 had another term
    stale = other.receive(InstallSnapshot(1, 3, 9, 1, ["old"]))[0].message
    assert isinstance(stale, AppendReply) and not stale.success and other.snapshot_index == 2


def test_compact_refuses_unapplied_entries() -> None:
    node = RaftNode(1, [1], MemoryStorage())
    node.tick(1000)  # the only voter: leader at once, its no-op committed
    node.propose("a")
    node.committed_entries()
    node.propose("b")  # committed, not applied yet
    with pytest.raises(ValueError, match="only entries up to 2 are applied"):
        node.compact(3, ["a", "b"])


def _single_node_with(tmp_path: Path, values: list[str]) -> RaftNode:
    node = RaftNode(1, [1], FileStorage(tmp_path))
    node.tick(1000)
    for v in values:
        node.propose(v)
    node.committed_entries()
    return node


def test_restart_from_snapshot_and_log(tmp_path: Path) -> None:
    node = _single_node_with(tmp_path, ["a", "b", "c"])
    node.compact(3, ["a", "b"])
    node.propose("d")
    again = RaftNode(1, [1], FileStorage(tmp_path))
    assert again.snapshot_to_load() == Snapshot(3, 1, ["a", "b"])
    assert (again.snapshot_index, again.last_index, again.commit_index) == (3, 5, 3)
    assert [e.data for e in again.entries(4, 5)] == ["c", "d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl", "snapshot-3.json", "state.json"]
    again.compact(3, ["ignored"])  # not beyond the snapshot: nothing to do
    again.tick(5000)
    again.committed_entries()
    again.compact(5, ["a", "b", "c", "d"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl", "snapshot-5.json", "state.json"]


def test_a_crash_between_the_snapshot_and_the_log_rewrite_recovers(tmp_path: Path) -> None:
    node = _single_node_with(tmp_path, ["a", "b", "c"])
    old_log = (tmp_path / "log.jsonl").read_text()
    node.compact(3, ["a", "b"])
    (tmp_path / "log.jsonl").write_text(old_log)  # as if the crash came before the log was rewritten
    (tmp_path / "snapshot-9.json.tmp").write_text('{"index": 9')  # and a half-written newer one
    again = RaftNode(1, [1], FileStorage(tmp_path))
    assert (again.snapshot_index, again.last_index, [e.data for e in again.log]) == (3, 4, ["c"])
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 1  # the rewrite was finished
    assert not (tmp_path / "snapshot-9.json.tmp").exists()
    # A follower that installed a snapshot conflicting with its log, crashing before the rewrite:
    # the old log's entry at the snapshot index has another term, so none of that log is kept.
    FileStorage(tmp_path).save_snapshot(Snapshot(4, 9, ["x"]), [])
    (tmp_path / "log.jsonl").write_text(old_log)
    crashed = RaftNode(1, [1], FileStorage(tmp_path))
    assert (crashed.snapshot_index, crashed.snapshot_term, crashed.log) == (4, 9, [])


def test_a_log_missing_entries_after_its_snapshot_is_refused_by_name(tmp_path: Path) -> None:
    node = _single_node_with(tmp_path, ["a", "b", "c"])
    node.compact(2, ["a"])
    (tmp_path / "snapshot-2.json").unlink()
    with pytest.raises(RaftStorageError, match="starts at index 3 but there is no snapshot"):
        FileStorage(tmp_path).load()


def test_install_snapshot_round_trips_on_the_wire() -> None:
    from broker.controller.wire import decode, encode

    msg = InstallSnapshot(4, 2, 120, 3, {"applied": 7, "records": [{"kind": "fence_broker", "broker_id": 1}]})
    assert decode(encode(msg)) == msg


def test_a_log_written_before_snapshots_existed_still_loads_and_compacts(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text('{"t": 1, "d": null}\n{"t": 1, "d": "a"}\n')  # lines without "i"
    node = RaftNode(1, [1], FileStorage(tmp_path))
    assert node.last_index == 2
    node.tick(1000)
    assert [e.data for _, e in node.committed_entries()] == [None, "a", None]
    node.compact(3, ["a"])
    again = RaftNode(1, [1], FileStorage(tmp_path))
    assert (again.snapshot_index, again.last_index) == (3, 3)
