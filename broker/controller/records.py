"""Metadata records: every change to the cluster metadata is one of these frozen values.

The state machine (`state.py`) applies them in log order; replaying the same records always
gives the same state, so they are what the Raft log carries. `to_dict`/`from_dict` give the
JSON form stored on disk and sent between controllers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class RegisterBroker:
    kind: ClassVar[str] = "register_broker"
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    incarnation: str = ""
    # A broker process that replaces an earlier one (new incarnation) registers fenced, as in KRaft: it
    # serves nothing until its heartbeat shows the controller it is back, and it rejoins ISRs by catching up.
    fenced: bool = False
    # (listener name, host, port) of every listener, as Kafka's RegisterBrokerRecord endpoints: a client is told
    # the address of the listener it came through; host/port above are the inter-broker listener's.
    endpoints: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True)
class BrokerHeartbeat:
    kind: ClassVar[str] = "heartbeat"
    broker_id: int
    now_ms: int


@dataclass(frozen=True)
class FenceBroker:
    kind: ClassVar[str] = "fence_broker"
    broker_id: int


@dataclass(frozen=True)
class UnfenceBroker:
    kind: ClassVar[str] = "unfence_broker"
    broker_id: int


@dataclass(frozen=True)
class CreateTopic:
    kind: ClassVar[str] = "create_topic"
    name: str
    topic_id: str
    # assignment[p] is the replica list of partition p; its first entry is the preferred leader.
    assignment: tuple[tuple[int, ...], ...]
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AddPartitions:
    """New partitions `first_partition`, `first_partition + 1`, ... of a topic (Kafka's CreatePartitions).

    The partition number and topic id are in the record so that applying it is exact: a record proposed
    against an older partition count (two requests racing) or an older incarnation of the topic is ignored.
    """

    kind: ClassVar[str] = "add_partitions"
    topic: str
    topic_id: str
    first_partition: int
    assignment: tuple[tuple[int, ...], ...]
    isr: tuple[tuple[int, ...], ...]  # isr[i] of new partition i; its first entry leads


@dataclass(frozen=True)
class DeleteTopic:
    kind: ClassVar[str] = "delete_topic"
    name: str


@dataclass(frozen=True)
class PartitionChange:
    """A new leader and/or ISR for one partition; a leader change bumps the leader epoch."""

    kind: ClassVar[str] = "partition_change"
    topic: str
    partition: int
    leader: int  # -1: no leader (offline)
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True)
class ConfigChange:
    kind: ClassVar[str] = "config_change"
    resource: str  # "broker:<id>", "topic:<name>" or "cluster"
    key: str
    value: str | None  # None deletes the key


@dataclass(frozen=True)
class ProducerIdsBlock:
    """Producer ids `first_id` .. `first_id + size - 1` given to one broker (Kafka's AllocateProducerIds), so
    no two brokers ever hand the same id to two idempotent producers."""

    kind: ClassVar[str] = "producer_ids"
    broker_id: int
    first_id: int
    size: int


@dataclass(frozen=True)
class ScramCredentialChange:
    """One user's SCRAM credential for one mechanism, set or (`remove`) deleted: Kafka's
    UserScramCredentialRecord / RemoveUserScramCredentialRecord (KIP-554). Salt and keys are base64, as the
    metadata travels as JSON; never a password."""

    kind: ClassVar[str] = "scram_credential"
    user: str
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    salt: str = ""
    stored_key: str = ""
    server_key: str = ""
    iterations: int = 0
    remove: bool = False


@dataclass(frozen=True)
class AclChange:
    """One ACL binding added or (`remove`) deleted: Kafka's AccessControlEntryRecord /
    RemoveAccessControlEntryRecord. Enum fields carry Kafka's numbers (ResourceType, PatternType, AclOperation,
    AclPermissionType); a binding is its value, so adding one twice keeps one (Kafka's set semantics)."""

    kind: ClassVar[str] = "acl"
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int
    remove: bool = False

    def binding(self) -> tuple[int, str, int, str, str, int, int]:
        return (self.resource_type, self.resource_name, self.pattern_type, self.principal, self.host,
                self.operation, self.permission)


SECURITY_RECORDS = (ScramCredentialChange, AclChange)  # what a broker may propose for its security admin APIs

Record = (
    RegisterBroker
    | BrokerHeartbeat
    | FenceBroker
    | UnfenceBroker
    | CreateTopic
    | AddPartitions
    | DeleteTopic
    | PartitionChange
    | ConfigChange
    | ProducerIdsBlock
    | ScramCredentialChange
    | AclChange
)

_KINDS: dict[str, type[Any]] = {
    cls.kind: cls
    for cls in (
        RegisterBroker,
        BrokerHeartbeat,
        FenceBroker,
        UnfenceBroker,
        CreateTopic,
        AddPartitions,
        DeleteTopic,
        PartitionChange,
        ConfigChange,
        ProducerIdsBlock,
        ScramCredentialChange,
        AclChange,
    )
}


def to_dict(record: Record) -> dict[str, Any]:
    out = asdict(record)
    out["kind"] = record.kind
    return out


def _tuplify(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuplify(v) for v in value)
    return value


def from_dict(data: dict[str, Any]) -> Record:
    kind = data.get("kind")
    cls = _KINDS.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown metadata record kind {kind!r}; known: {sorted(_KINDS)}")
    fields = {k: _tuplify(v) for k, v in data.items() if k != "kind"}
    record: Record = cls(**fields)
    return record
