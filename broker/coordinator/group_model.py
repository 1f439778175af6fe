"""A classic consumer group's state as the coordinator keeps it in memory (Kafka's ClassicGroup and
ClassicGroupMember), and the answers JoinGroup and SyncGroup wait for. The state machine that moves it is
broker/coordinator/groups.py (requests) and broker/coordinator/rebalance.py (generations)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: tuple[JoinedMember, ...]  # only for the leader
    skip_assignment: bool = False  # KIP-814: the leader of a Stable group must not compute assignments


@dataclass(frozen=True, slots=True)
class SyncResult:
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    last_heartbeat: float = field(default_factory=time.monotonic)
    join_future: asyncio.Future[JoinResult] | None = None
    sync_future: asyncio.Future[SyncResult] | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    join_deadline: float = 0.0
    timer: asyncio.TimerHandle | None = None
    pending: dict[str, float] = field(default_factory=dict)  # KIP-394 member ids given out: monotonic expiry

    def static_member_id(self, group_instance_id: str) -> str | None:
        """The member id that owns `group_instance_id` now, if any."""
        return next((m.member_id for m in self.members.values() if m.group_instance_id == group_instance_id), None)


class MemberIdRequired(KafkaApiError):
    """KIP-394: rejoin with `member_id`, the id this JoinGroup was given."""

    code = ErrorCode.member_id_required

    def __init__(self, group_id: str, member_id: str) -> None:
        super().__init__(message=f"group {group_id!r}: join again with the member id {member_id!r} given here")
        self.member_id = member_id


def fail(future: asyncio.Future[Any] | None, code: ErrorCode, message: str) -> None:
    """Answer a waiting JoinGroup or SyncGroup with an error, unless it was answered already."""
    if future is not None and not future.done():
        future.set_exception(KafkaApiError(code, message))
