"""A metadata snapshot is the records that rebuild the state: replaying them gives an equal state, and the
records after the snapshot apply to it exactly as they apply to the original."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.controller import records as r
from broker.controller.election import on_broker_fenced, on_broker_unfenced, preferred_leader_changes
from broker.controller.errors import InvalidReplicationFactor
from broker.controller.new_partitions import add_partitions
from broker.controller.placement import assign_replicas
from broker.controller.snapshot import from_snapshot, state_records, to_snapshot
from broker.controller.state import PRODUCER_IDS_BLOCK_SIZE, MetadataState

OPS = ["fence", "unfence", "create", "grow", "delete", "config", "unconfig", "preferred", "producer_ids",
       "reregister", "scram", "unscram", "acl", "unacl", "snapshot"]
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def acl(arg: int, remove: bool = False) -> r.AclChange:
    return r.AclChange(2, f"t{arg % 3}", 3, f"User:u{arg % 2}", "*", 3 + arg % 2, 3, remove)


def history(ops: list[tuple[str, int]]) -> tuple[list[r.Record], list[int]]:
    """A metadata log made by the controller's own rules from `ops`, and where "snapshot" ops cut it."""
    s = MetadataState()
    log: list[r.Record] = []
    cuts: list[int] = []

    def emit(rec: r.Record) -> None:
        log.append(rec)
        s.apply(rec)

    for i in range(4):
        emit(r.RegisterBroker(i + 1, "127.0.0.1", 9092 + i, f"rack-{i % 2}" if i else None, f"inc{i}"))
    emit(r.BrokerHeartbeat(1, 1000))  # as logs from before heartbeats left the log hold them
    n = 0
    for kind, arg in ops:
        live = {b.broker_id for b in s.live_brokers()}
        if kind == "fence" and arg in live:
            emit(r.FenceBroker(arg))
            for c in on_broker_fenced(s, arg):
                emit(c)
        elif kind == "unfence" and arg not in live:
            emit(r.UnfenceBroker(arg))
            for c in on_broker_unfenced(s, arg):
                emit(c)
        elif kind == "reregister":  # a restarted process: fenced in the same proposal as its registration
            if arg in live:
                emit(r.FenceBroker(arg))
                for c in on_broker_fenced(s, arg):
                    emit(c)
            emit(r.RegisterBroker(arg, "127.0.0.1", 9092 + arg, None, f"inc{arg}-{len(log)}", fenced=True))
        elif kind == "create":
            n += 1
            with contextlib.suppress(InvalidReplicationFactor):  # too few live brokers: no create
                emit(r.CreateTopic(f"t{n % 3}", f"id{n}", assign_replicas(s.live_brokers(), 2, min(arg, 3)),
                                   (("retention.ms", str(arg)),)))
        elif kind == "grow" and s.topics:
            with contextlib.suppress(InvalidReplicationFactor):
                grown = sorted(s.topics)[-1]
                emit(add_partitions(s, grown, len(s.topics[grown].partitions) + arg))
        elif kind == "delete" and s.topics:
            emit(r.DeleteTopic(sorted(s.topics)[0]))
        elif kind == "config":
            emit(r.ConfigChange(f"broker:{arg}" if arg < 4 else f"topic:t{arg % 3}", f"k{arg % 2}", str(arg)))
        elif kind == "unconfig":
            emit(r.ConfigChange(f"broker:{arg}", f"k{arg % 2}", None))
        elif kind == "preferred":
            for c in preferred_leader_changes(s):
                emit(c)
        elif kind == "scram":
            emit(r.ScramCredentialChange(f"u{arg % 3}", MECHANISMS[arg % 2], f"salt{len(log)}", "c3RvcmVk",
                                         "c2VydmVy", 4096 + arg))
        elif kind == "unscram":
            emit(r.ScramCredentialChange(f"u{arg % 3}", MECHANISMS[arg % 2], remove=True))
        elif kind in ("acl", "unacl"):
            emit(acl(arg, remove=kind == "unacl"))
        elif kind == "producer_ids":
            emit(r.ProducerIdsBlock(arg, s.next_producer_id, PRODUCER_IDS_BLOCK_SIZE))
        elif kind == "snapshot":
            cuts.append(len(log))
    return log, cuts


def same(a: MetadataState, b: MetadataState) -> None:
    assert a.snapshot() == b.snapshot()  # brokers, topics (partitions, epochs, ISRs), configs, next producer id
    assert a.producer_id_blocks == b.producer_id_blocks and a.applied == b.applied


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(1, 4)), max_size=40))
def test_a_snapshot_rebuilds_the_state_and_the_log_continues_from_it(ops: list[tuple[str, int]]) -> None:
    log, cuts = history(ops)
    for cut in [*cuts, len(log)]:
        original = MetadataState()
        for rec in log[:cut]:
            original.apply(rec)
        # Through JSON, as it is stored on disk and sent to followers and brokers.
        loaded = from_snapshot(json.loads(json.dumps(to_snapshot(original))))
        same(loaded, original)
        for rec in log[cut:]:  # what follows the snapshot in the log applies the same way to both
            original.apply(rec)
            loaded.apply(rec)
        same(loaded, original)
        assert loaded.next_producer_id == original.next_producer_id


def test_the_snapshot_is_as_big_as_the_state_not_the_history() -> None:
    log, _ = history([("create", 3)] * 3 + [("fence", 2), ("unfence", 2), ("config", 1)] * 400)
    state = MetadataState()
    for rec in log:
        state.apply(rec)
    assert len(log) > 1000 and len(state_records(state)) < 40


def test_a_bad_snapshot_is_named() -> None:
    with pytest.raises(ValueError, match="bad metadata snapshot"):
        from_snapshot({"records": [{"kind": "register_broker"}]})


def test_listener_endpoints_survive_the_json_log_and_a_snapshot() -> None:
    """A broker's per-listener addresses (Kafka's RegisterBrokerRecord endpoints) come back from the JSON records
    and from a snapshot: without them a client of the CLIENT listener would be sent to the INTERNAL one."""
    record = r.RegisterBroker(1, "127.0.0.1", 9094, None, "inc", endpoints=(("CLIENT", "h", 9093),
                                                                         ("INTERNAL", "127.0.0.1", 9094)))
    state = MetadataState()
    state.apply(r.from_dict(json.loads(json.dumps(r.to_dict(record)))))
    rebuilt = from_snapshot(json.loads(json.dumps(to_snapshot(state))))
    broker = rebuilt.brokers[1]
    assert broker.address("CLIENT") == ("h", 9093)
    assert broker.address("INTERNAL") == ("127.0.0.1", 9094)
    assert broker.address("OTHER") == ("127.0.0.1", 9094)  # unknown listener: the inter-broker address


def test_credentials_and_acls_are_metadata_kept_through_json_and_a_snapshot() -> None:
    """As KRaft's UserScramCredentialRecord and AccessControlEntryRecord: a credential set twice keeps the newest,
    a removed one is gone with its user when it was the last; an ACL added twice is one, removal removes it."""
    state = MetadataState()
    log = [r.ScramCredentialChange("alice", "SCRAM-SHA-256", "czE=", "azE=", "azI=", 4096),
           r.ScramCredentialChange("alice", "SCRAM-SHA-256", "czI=", "azM=", "azQ=", 8192),
           r.ScramCredentialChange("alice", "SCRAM-SHA-512", "czM=", "azU=", "azY=", 4096),
           r.ScramCredentialChange("bob", "SCRAM-SHA-512", "czQ=", "azc=", "azg=", 4096),
           r.ScramCredentialChange("bob", "SCRAM-SHA-512", remove=True),
           acl(1), acl(1), acl(2), acl(2, remove=True)]
    for rec in log:
        state.apply(r.from_dict(json.loads(json.dumps(r.to_dict(rec)))))
    assert sorted(state.scram) == ["alice"] and sorted(state.scram["alice"]) == list(MECHANISMS)
    assert state.scram["alice"]["SCRAM-SHA-256"].iterations == 8192
    assert state.acls == (acl(1),)
    rebuilt = from_snapshot(json.loads(json.dumps(to_snapshot(state))))
    same(rebuilt, state)
    assert rebuilt.scram["alice"]["SCRAM-SHA-256"].salt == "czI=" and rebuilt.acls == (acl(1),)
