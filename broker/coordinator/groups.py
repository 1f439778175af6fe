"""The classic consumer-group coordinator (JoinGroup/SyncGroup/Heartbeat/LeaveGroup protocol).

States (Kafka's GroupMetadata):
    Empty --join--> PreparingRebalance --all known members rejoined or rebalance timeout-->
    CompletingRebalance --leader's SyncGroup--> Stable --join/leave/session expiry--> PreparingRebalance
    (any) --last member gone--> Empty ; Empty --DeleteGroups--> Dead
A new (Empty) group waits group.initial.rebalance.delay.ms before completing its first join, so that
members starting together land in one generation. Assignment is the clients' business: the leader
receives every member's metadata and returns the assignments in SyncGroup.

Durability (Kafka's GroupMetadataManager): every completed rebalance is stored through the `journal` as a
group metadata record in `__consumer_offsets` before the members get their assignments; every replica
of that partition loads the records (`load_group`), and the broker that becomes the group's coordinator
takes the stored group (Stable, same generation and members, fresh sessions) over whatever older state
it held, so members keep heartbeating and committing across a coordinator move or restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.offsets_codec import GroupMetadataValue, StoredMember
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.groups")
GroupJournal = Callable[[str, GroupMetadataValue | None], Awaitable[None]]


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


def _fail(future: asyncio.Future[Any] | None, code: ErrorCode, message: str) -> None:
    if future is not None and not future.done():
        future.set_exception(KafkaApiError(code, message))


class GroupCoordinator:
    def __init__(
        self, *, initial_rebalance_delay_ms: int, min_session_timeout_ms: int, max_session_timeout_ms: int,
        journal: GroupJournal | None = None,
    ) -> None:
        self.initial_delay = initial_rebalance_delay_ms / 1000
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.groups: dict[str, Group] = {}
        self.journal = journal
        self.stored: dict[str, GroupMetadataValue] = {}  # the newest group metadata record per group
        self._writes: set[asyncio.Task[None]] = set()

    # --- stored group metadata ---------------------------------------------------------------------

    def load_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        """A group metadata record read from `__consumer_offsets` (replay at start, or replication)."""
        if value is None:
            self.stored.pop(group_id, None)
        else:
            self.stored[group_id] = value

    def unload(self, owned: Callable[[str], bool]) -> None:
        """Forget the in-memory state of groups this broker no longer (or newly) coordinates, so that the
        next request loads what is stored (Kafka's onResignation/onElection)."""
        for group_id in [g for g in self.groups if owned(g)]:
            group = self.groups.pop(group_id)
            if group.timer is not None:
                group.timer.cancel()
            for member in group.members.values():
                _fail(member.join_future, ErrorCode.not_coordinator, "the group coordinator moved")
                _fail(member.sync_future, ErrorCode.not_coordinator, "the group coordinator moved")

    def lookup(self, group_id: str) -> Group | None:
        group = self.groups.get(group_id)
        stored = self.stored.get(group_id)
        if stored is None or not stored.members or (group is not None and group.generation >= stored.generation):
            return group
        now = time.monotonic()
        restored = Group(group_id, GroupState.STABLE, stored.generation, stored.protocol_type, stored.protocol,
                         stored.leader)
        for m in stored.members:
            restored.members[m.member_id] = Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                m.rebalance_timeout_ms, stored.protocol_type, [(stored.protocol or "", m.subscription)],
                m.assignment, last_heartbeat=now,
            )  # fmt: skip
        log.info("group %s loaded from %s at generation %d with %d member(s)", group_id, "__consumer_offsets",
                 stored.generation, len(stored.members))
        self.groups[group_id] = restored
        return restored

    async def _store(self, group: Group) -> None:
        if self.journal is None:
            return
        value = GroupMetadataValue(
            group.protocol_type or "", group.generation, group.protocol_name, group.leader_id, int(time.time() * 1000),
            tuple(StoredMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                               m.session_timeout_ms, dict(m.protocols).get(group.protocol_name or "", b""),
                               m.assignment)
                  for m in group.members.values()),
        )  # fmt: skip
        try:
            await self.journal(group.group_id, value)
            self.stored[group.group_id] = value
        except Exception as exc:  # the group works on in memory; only a coordinator move would lose it
            log.warning("group %s generation %d not stored in __consumer_offsets: %s", group.group_id,
                        group.generation, exc)

    def _store_later(self, group_id: str, group: Group | None) -> None:
        """Store (or, with None, delete) from synchronous code: timers and DeleteGroups."""
        if self.journal is None:
            return
        if group is not None:
            task = asyncio.get_running_loop().create_task(self._store(group))
        else:
            task = asyncio.get_running_loop().create_task(self._delete_stored(group_id))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _delete_stored(self, group_id: str) -> None:
        assert self.journal is not None
        try:
            await self.journal(group_id, None)
            self.stored.pop(group_id, None)
        except Exception as exc:
            log.warning("group %s: tombstone not written to __consumer_offsets: %s", group_id, exc)

    # --- JoinGroup / SyncGroup -------------------------------------------------------------------

    async def join(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ) -> JoinResult:
        if not group_id:
            raise KafkaApiError(ErrorCode.invalid_group_id, "group id is empty")
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            raise KafkaApiError(
                ErrorCode.invalid_session_timeout,
                f"session timeout {session_timeout_ms} ms is outside group.min.session.timeout.ms="
                f"{self.min_session_timeout_ms} .. group.max.session.timeout.ms={self.max_session_timeout_ms}",
            )
        group = self.lookup(group_id)
        if group is None or group.state is GroupState.DEAD:
            group = self.groups[group_id] = Group(group_id)
        if group.members and (
            protocol_type != group.protocol_type
            or not self._common_protocols(group, {name for name, _ in protocols}, exclude=member_id)
        ):
            raise KafkaApiError(
                ErrorCode.inconsistent_group_protocol,
                f"group {group_id!r} members use protocol type {group.protocol_type!r} with other assignors",
            )
        if not member_id:
            member_id = f"{client_id or 'member'}-{uuid.uuid4()}"
        elif member_id not in group.members:
            raise KafkaApiError(ErrorCode.unknown_member_id, f"member {member_id!r} is not in group {group_id!r}")
        member = group.members.get(member_id)
        if member is not None and member.protocols == protocols and (
            group.state is GroupState.COMPLETING_REBALANCE
            or (group.state is GroupState.STABLE and member_id != group.leader_id)
        ):
            # Kafka's ClassicGroup (doCurrentMemberJoinGroup): a known member rejoining with unchanged protocols
            # gets the current generation instead of starting a rebalance (a client whose JoinGroup answer was
            # lost to its own timeout would otherwise rebalance the group again and again).
            member.last_heartbeat = time.monotonic()
            return self._join_result(group, member)
        if member is None:
            member = Member(
                member_id,
                group_instance_id,
                client_id,
                client_host,
                session_timeout_ms,
                rebalance_timeout_ms,
                protocol_type,
                protocols,
            )
            group.members[member_id] = member
        else:
            member.protocols = protocols
            member.session_timeout_ms = session_timeout_ms
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.last_heartbeat = time.monotonic()
        group.protocol_type = protocol_type
        _fail(member.join_future, ErrorCode.rebalance_in_progress, "superseded by a newer JoinGroup")
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_future = future
        if group.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(group, f"member {member_id} joined ({client_id})")
        self._maybe_complete_join(group)
        return await future

    async def sync(
        self, group_id: str, generation: int, member_id: str, assignments: dict[str, bytes]
    ) -> SyncResult:
        group, member = self._member(group_id, member_id)
        if generation != group.generation:
            raise KafkaApiError(
                ErrorCode.illegal_generation, f"generation {generation} is not the group's {group.generation}"
            )
        member.last_heartbeat = time.monotonic()
        if group.state is GroupState.PREPARING_REBALANCE:
            raise KafkaApiError(ErrorCode.rebalance_in_progress, f"group {group_id!r} is rebalancing")
        if group.state is GroupState.STABLE:
            return SyncResult(group.protocol_type, group.protocol_name, member.assignment)
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.sync_future = future
        if member_id == group.leader_id:
            for each in group.members.values():
                each.assignment = assignments.get(each.member_id, b"")
            group.state = GroupState.STABLE
            generation = group.generation
            await self._store(group)  # before anyone gets an assignment, as Kafka's storeGroup
            if group.generation != generation or group.state is not GroupState.STABLE:
                return await future  # a rebalance began meanwhile: it has answered (or will answer) everyone
            for each in group.members.values():
                if each.sync_future is not None and not each.sync_future.done():
                    each.sync_future.set_result(
                        SyncResult(group.protocol_type, group.protocol_name, each.assignment)
                    )
                each.sync_future = None
        return await future

    # --- Heartbeat / LeaveGroup / expiry ---------------------------------------------------------

    def heartbeat(self, group_id: str, generation: int, member_id: str) -> None:
        group, member = self._member(group_id, member_id)
        member.last_heartbeat = time.monotonic()
        if group.state is GroupState.PREPARING_REBALANCE:
            raise KafkaApiError(ErrorCode.rebalance_in_progress, f"group {group_id!r} is rebalancing")
        if generation != group.generation:
            raise KafkaApiError(
                ErrorCode.illegal_generation, f"generation {generation} is not the group's {group.generation}"
            )

    def leave(self, group_id: str, member_id: str) -> None:
        group, member = self._member(group_id, member_id)
        self._remove_member(group, member, "left the group")

    def expire_sessions(self) -> list[str]:
        """Remove members whose session timed out (called periodically); returns their ids."""
        now = time.monotonic()
        expired = []
        for group in list(self.groups.values()):
            for member in list(group.members.values()):
                waiting = member.join_future is not None and not member.join_future.done()
                if not waiting and now - member.last_heartbeat > member.session_timeout_ms / 1000:
                    expired.append(member.member_id)
                    self._remove_member(group, member, "session timed out")
        return expired

    def validate_commit(self, group_id: str, generation: int, member_id: str) -> None:
        """OffsetCommit from a group member must match its generation; -1 means a standalone commit."""
        group = self.lookup(group_id)
        if generation < 0 and (group is None or not group.members):
            return
        if group is None:
            raise KafkaApiError(ErrorCode.illegal_generation, f"group {group_id!r} has no generation")
        _, member = self._member(group_id, member_id)
        member.last_heartbeat = time.monotonic()
        if generation != group.generation:
            raise KafkaApiError(
                ErrorCode.illegal_generation, f"generation {generation} is not the group's {group.generation}"
            )
        # As in Kafka: commits stay open while PreparingRebalance (cooperative members keep consuming
        # their partitions), but not between JoinGroup and SyncGroup.
        if group.state is GroupState.COMPLETING_REBALANCE:
            raise KafkaApiError(ErrorCode.rebalance_in_progress, f"group {group_id!r} is completing a rebalance")

    def delete(self, group_id: str) -> None:
        group = self.lookup(group_id)
        if group is not None and group.members:
            raise KafkaApiError(ErrorCode.non_empty_group, f"group {group_id!r} still has members")
        if group is not None:
            group.state = GroupState.DEAD
            del self.groups[group_id]
        if group_id in self.stored:
            self._store_later(group_id, None)

    # --- internals -------------------------------------------------------------------------------

    def _member(self, group_id: str, member_id: str) -> tuple[Group, Member]:
        group = self.lookup(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            raise KafkaApiError(ErrorCode.unknown_member_id, f"member {member_id!r} is not in group {group_id!r}")
        return group, member

    @staticmethod
    def _common_protocols(group: Group, extra: set[str] | None = None, exclude: str = "") -> list[str]:
        sets = [{name for name, _ in m.protocols} for m in group.members.values() if m.member_id != exclude]
        if extra is not None:
            sets.append(extra)
        if not sets:
            return []
        common = set.intersection(*sets)
        leader = group.members.get(group.leader_id or "") or next(iter(group.members.values()), None)
        order = [name for name, _ in leader.protocols] if leader is not None else sorted(common)
        return [name for name in order if name in common] or sorted(common)

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        del group.members[member.member_id]
        _fail(member.join_future, ErrorCode.unknown_member_id, f"member {reason}")
        _fail(member.sync_future, ErrorCode.unknown_member_id, f"member {reason}")
        if group.leader_id == member.member_id:
            group.leader_id = None
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} {reason}")
        self._maybe_complete_join(group)

    @staticmethod
    def _join_result(group: Group, member: Member) -> JoinResult:
        """The JoinGroup answer of the current generation; the leader also gets every member's metadata."""
        assert group.leader_id is not None
        everyone = tuple(
            JoinedMember(m.member_id, m.group_instance_id, dict(m.protocols).get(group.protocol_name or "", b""))
            for m in group.members.values()
        ) if member.member_id == group.leader_id else ()
        return JoinResult(group.generation, group.protocol_type, group.protocol_name, group.leader_id,
                          member.member_id, everyone)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        log.info("preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                 group.group_id, group.state.value, group.generation, reason)
        for member in group.members.values():
            _fail(member.sync_future, ErrorCode.rebalance_in_progress, "group is rebalancing")
            member.sync_future = None
        was_empty = group.state is GroupState.EMPTY
        group.state = GroupState.PREPARING_REBALANCE
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0) / 1000
        delay = self.initial_delay if was_empty else timeout
        group.join_deadline = time.monotonic() + (self.initial_delay if was_empty else 0.0)
        if group.timer is not None:
            group.timer.cancel()
        group.timer = asyncio.get_running_loop().call_later(delay, self._on_join_timeout, group)

    def _on_join_timeout(self, group: Group) -> None:
        group.timer = None
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if time.monotonic() < group.join_deadline:
            self._maybe_complete_join(group)
            return
        for member in list(group.members.values()):
            if member.join_future is None or member.join_future.done():
                del group.members[member.member_id]
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if not group.members:
            self._complete_join(group)
            return
        all_joined = all(m.join_future is not None and not m.join_future.done() for m in group.members.values())
        if not all_joined:
            return
        remaining = group.join_deadline - time.monotonic()
        if remaining > 0:
            if group.timer is not None:
                group.timer.cancel()
            group.timer = asyncio.get_running_loop().call_later(remaining, self._on_join_timeout, group)
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.timer is not None:
            group.timer.cancel()
            group.timer = None
        group.generation += 1
        if not group.members:
            group.state = GroupState.EMPTY
            group.protocol_name = None
            group.leader_id = None
            if group.group_id in self.stored:
                self._store_later(group.group_id, group)  # the stored members are gone: never restore them
            return
        common = self._common_protocols(group)
        group.protocol_name = common[0] if common else None
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.state = GroupState.COMPLETING_REBALANCE
        assert group.leader_id is not None
        for member in group.members.values():
            result = self._join_result(group, member)
            if member.join_future is not None and not member.join_future.done():
                member.join_future.set_result(result)
            member.join_future = None
            member.last_heartbeat = time.monotonic()
