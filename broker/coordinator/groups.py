"""The classic consumer-group coordinator (JoinGroup/SyncGroup/Heartbeat/LeaveGroup protocol): requests
checked against the group (broker/coordinator/group_model.py) and passed to its generations
(broker/coordinator/rebalance.py, where the state machine is drawn); groups stored in `__consumer_offsets`
by broker/coordinator/group_store.py.

Static membership (KIP-345, Kafka's ClassicGroup/GroupMetadataManager): a member that joins with a
`group.instance.id` keeps its place while it restarts. A JoinGroup with an empty member id and a known
instance id replaces the old member id (its pending join/sync answers FENCED_INSTANCE_ID) and, in a Stable
group whose protocol stays the same, gets the current generation and its old assignment at once: the group
is stored again and nobody else rebalances. Any request carrying an instance id with a member id that no
longer owns it gets FENCED_INSTANCE_ID; a rebalance never drops a static member that has not rejoined (only
its session timeout does); LeaveGroup v3+ removes a member by instance id alone.

Known member ids (KIP-394, JoinGroup v4+): a dynamic member's first JoinGroup, with an empty member id, is
answered MEMBER_ID_REQUIRED with a new member id and joins nothing; the id waits as a pending member for one
session timeout, and the member joins with it on its next JoinGroup. So a client whose first JoinGroup timed
out before its answer (and who sends another) leaves no orphan member behind for the rebalance to wait on.
As in Kafka's ClassicGroup, a rebalance completes only once no pending member remains (it joined or its
session timed out), and a member id neither pending nor in the group is UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from broker.coordinator.group_model import Group, GroupState, JoinResult, Member, MemberIdRequired, SyncResult, fail
from broker.coordinator.group_store import GroupJournal, GroupStore
from broker.coordinator.rebalance import Rebalancer
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.groups")


class GroupCoordinator:
    def __init__(
        self, *, initial_rebalance_delay_ms: int, min_session_timeout_ms: int, max_session_timeout_ms: int,
        journal: GroupJournal | None = None,
    ) -> None:
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.groups: dict[str, Group] = {}
        self.store = GroupStore(journal)
        self.rebalance = Rebalancer(initial_rebalance_delay_ms / 1000, self.store)

    def unload(self, owned: Callable[[str], bool]) -> None:
        """Forget the in-memory state of groups this broker no longer (or newly) coordinates, so that the
        next request loads what is stored (Kafka's onResignation/onElection)."""
        for group_id in [g for g in self.groups if owned(g)]:
            group = self.groups.pop(group_id)
            if group.timer is not None:
                group.timer.cancel()
            for member in group.members.values():
                fail(member.join_future, ErrorCode.not_coordinator, "the group coordinator moved")
                fail(member.sync_future, ErrorCode.not_coordinator, "the group coordinator moved")

    def lookup(self, group_id: str) -> Group | None:
        """The group in memory, or the stored one when that is newer (a coordinator move or restart)."""
        group = self.groups.get(group_id)
        restored = self.store.restore(group_id, group)
        if restored is None:
            return group
        self.groups[group_id] = restored
        return restored

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
        skip_assignment_supported: bool = False,
        require_known_member_id: bool = False,
    ) -> JoinResult:
        """`skip_assignment_supported`: JoinGroup v9+ (KIP-814), where a replaced static leader is told it leads
        but must not assign. `require_known_member_id`: JoinGroup v4+ (KIP-394), where a dynamic member without
        a member id gets one with MEMBER_ID_REQUIRED (`MemberIdRequired`) instead of joining."""
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
        replaced = group.static_member_id(group_instance_id) if group_instance_id and not member_id else None
        if group.members and (
            protocol_type != group.protocol_type
            or not self.rebalance.common_protocols(group, {name for name, _ in protocols},
                                                   exclude=replaced or member_id)
        ):
            raise KafkaApiError(
                ErrorCode.inconsistent_group_protocol,
                f"group {group_id!r} members use protocol type {group.protocol_type!r} with other assignors",
            )
        if replaced is not None:
            return await self._replace_static_member(
                group, replaced, f"{group_instance_id}-{uuid.uuid4()}", session_timeout_ms, rebalance_timeout_ms,
                protocols, skip_assignment_supported,
            )  # fmt: skip
        if not member_id:
            member_id = f"{group_instance_id or client_id or 'member'}-{uuid.uuid4()}"
            if require_known_member_id and group_instance_id is None:
                group.pending[member_id] = time.monotonic() + session_timeout_ms / 1000
                log.info("new member of group %s in state %s: gave it member id %s to join with",
                         group_id, group.state.value, member_id)
                raise MemberIdRequired(group_id, member_id)
        elif group_instance_id is None and member_id in group.pending:
            del group.pending[member_id]  # joins with the id it was given: a new member, below
        else:
            self._validate_member(group, member_id, group_instance_id)
        member = group.members.get(member_id)
        if member is not None and member.protocols == protocols and (
            group.state is GroupState.COMPLETING_REBALANCE
            or (group.state is GroupState.STABLE and member_id != group.leader_id)
        ):
            # Kafka's ClassicGroup (doCurrentMemberJoinGroup): a known member rejoining with unchanged protocols
            # gets the current generation instead of starting a rebalance (a client whose JoinGroup answer was
            # lost to its own timeout would otherwise rebalance the group again and again).
            member.last_heartbeat = time.monotonic()
            return self.rebalance.join_result(group, member)
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
        fail(member.join_future, ErrorCode.rebalance_in_progress, "superseded by a newer JoinGroup")
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_future = future
        if group.state is not GroupState.PREPARING_REBALANCE:
            self.rebalance.prepare(group, f"member {member_id} joined ({client_id})")
        self.rebalance.maybe_complete_join(group)
        return await future

    async def _replace_static_member(
        self, group: Group, old_id: str, new_id: str, session_timeout_ms: int, rebalance_timeout_ms: int,
        protocols: list[tuple[str, bytes]], skip_assignment_supported: bool,
    ) -> JoinResult:
        """A known static member restarted (Kafka's updateStaticMemberThenRebalanceOrCompleteJoin)."""
        old = group.members.pop(old_id)
        # A duplicate still waiting under the old id is fenced at once.
        fail(old.join_future, ErrorCode.fenced_instance_id, f"instance {old.group_instance_id!r} joined again")
        fail(old.sync_future, ErrorCode.fenced_instance_id, f"instance {old.group_instance_id!r} joined again")
        member = Member(new_id, old.group_instance_id, old.client_id, old.client_host, session_timeout_ms,
                        rebalance_timeout_ms, old.protocol_type, protocols, old.assignment)
        group.members[new_id] = member
        previous_leader = group.leader_id
        if previous_leader == old_id:
            group.leader_id = new_id
        log.info("group %s: static member %s rejoined as %s (was %s) in state %s", group.group_id,
                 member.group_instance_id, new_id, old_id, group.state.value)
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_future = future
        common = self.rebalance.common_protocols(group)
        if group.state is GroupState.STABLE and common and common[0] == group.protocol_name:
            generation = group.generation
            error = await self.store.store(group, required=True)
            if error is not None:  # as Kafka: the old member id stays the instance's owner
                if group.members.get(new_id) is member:
                    del group.members[new_id]
                    old.join_future = old.sync_future = None
                    group.members[old_id] = old
                    if group.leader_id == new_id:
                        group.leader_id = old_id
                fail(future, ErrorCode.coordinator_not_available, f"group not stored: {error}")
            elif group.state is GroupState.STABLE and group.generation == generation and not future.done():
                leads = group.leader_id == new_id
                if skip_assignment_supported:
                    leader = group.leader_id or ""
                    members = self.rebalance.joined_members(group) if leads else ()
                else:  # older clients must not believe they lead: a Stable group would drop their assignment
                    leader, members = (previous_leader or ""), ()
                future.set_result(JoinResult(group.generation, group.protocol_type, group.protocol_name, leader,
                                             new_id, members, skip_assignment=skip_assignment_supported and leads))
                member.join_future = None
            # else: a rebalance began meanwhile and answers this member with everyone else
        elif group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            # The leader may already have assigned for the old member id: rebalance so the new id gets a share.
            self.rebalance.prepare(group, f"static member {member.group_instance_id} rejoined as {new_id}")
            self.rebalance.maybe_complete_join(group)
        else:
            self.rebalance.maybe_complete_join(group)
        return await future

    async def sync(
        self, group_id: str, generation: int, member_id: str, assignments: dict[str, bytes],
        group_instance_id: str | None = None, protocol_type: str | None = None, protocol_name: str | None = None,
    ) -> SyncResult:
        """`protocol_type`/`protocol_name`: SyncGroup v5+ (KIP-559), checked against the group's when given."""
        group, member = self._member(group_id, member_id, group_instance_id)
        if generation != group.generation:
            raise KafkaApiError(
                ErrorCode.illegal_generation, f"generation {generation} is not the group's {group.generation}"
            )
        for given, chosen, what in ((protocol_type, group.protocol_type, "protocol type"),
                                    (protocol_name, group.protocol_name, "protocol")):
            if given is not None and given != chosen:
                raise KafkaApiError(ErrorCode.inconsistent_group_protocol,
                                    f"group {group_id!r} uses {what} {chosen!r}, not {given!r}")
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
            await self.store.store(group)  # before anyone gets an assignment, as Kafka's storeGroup
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

    def heartbeat(self, group_id: str, generation: int, member_id: str, group_instance_id: str | None = None) -> None:
        group, member = self._member(group_id, member_id, group_instance_id)
        member.last_heartbeat = time.monotonic()
        if group.state is GroupState.PREPARING_REBALANCE:
            raise KafkaApiError(ErrorCode.rebalance_in_progress, f"group {group_id!r} is rebalancing")
        if generation != group.generation:
            raise KafkaApiError(
                ErrorCode.illegal_generation, f"generation {generation} is not the group's {group.generation}"
            )

    def leave(self, group_id: str, member_id: str, group_instance_id: str | None = None) -> None:
        """A member leaves; with an empty member id, the static member of `group_instance_id` is removed (an
        administrator's LeaveGroup v3+, Admin.removeMembersFromConsumerGroup)."""
        if not member_id and group_instance_id is not None:
            group = self.lookup(group_id)
            owner = group.static_member_id(group_instance_id) if group is not None else None
            if group is None or owner is None:
                raise KafkaApiError(ErrorCode.unknown_member_id,
                                    f"no member of group {group_id!r} has instance id {group_instance_id!r}")
            member_id = owner
        group, member = self._member(group_id, member_id, group_instance_id)
        self.rebalance.remove_member(group, member, "left the group")

    def expire_sessions(self) -> list[str]:
        """Remove members whose session timed out (called periodically); returns their ids."""
        now = time.monotonic()
        expired = []
        for group in list(self.groups.values()):
            for member_id, deadline in list(group.pending.items()):
                if now > deadline:  # given an id (KIP-394) but never joined with it
                    del group.pending[member_id]
                    expired.append(member_id)
                    self.rebalance.maybe_complete_join(group)
            for member in list(group.members.values()):
                waiting = member.join_future is not None and not member.join_future.done()
                if not waiting and now - member.last_heartbeat > member.session_timeout_ms / 1000:
                    expired.append(member.member_id)
                    self.rebalance.remove_member(group, member, "session timed out")
        return expired

    def validate_commit(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None = None,
        has_offsets: bool = False,
    ) -> None:
        """OffsetCommit from a group member must match its generation; -1 means a standalone commit.
        `has_offsets`: the group has committed offsets (in Kafka such a group exists, Empty, without members)."""
        group = self.lookup(group_id)
        if generation < 0 and (group is None or not group.members):
            return
        if group is None:
            if has_offsets:  # Kafka keeps an Empty group for one that only stores offsets: no member is known
                raise KafkaApiError(ErrorCode.unknown_member_id, f"member {member_id!r} is not in group {group_id!r}")
            raise KafkaApiError(ErrorCode.illegal_generation, f"group {group_id!r} has no generation")
        _, member = self._member(group_id, member_id, group_instance_id)
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
        if group_id in self.store.stored:
            self.store.store_later(group_id, None)

    # --- internals -------------------------------------------------------------------------------

    def _member(self, group_id: str, member_id: str, group_instance_id: str | None = None) -> tuple[Group, Member]:
        group = self.lookup(group_id)
        if group is None:
            raise KafkaApiError(ErrorCode.unknown_member_id, f"member {member_id!r} is not in group {group_id!r}")
        return group, self._validate_member(group, member_id, group_instance_id)

    @staticmethod
    def _validate_member(group: Group, member_id: str, group_instance_id: str | None) -> Member:
        """Kafka's ClassicGroup.validateMember: an instance id must be owned by this member id."""
        if group_instance_id is not None:
            owner = group.static_member_id(group_instance_id)
            if owner is None:
                raise KafkaApiError(ErrorCode.unknown_member_id,
                                    f"no member of group {group.group_id!r} has instance id {group_instance_id!r}")
            if owner != member_id:
                raise KafkaApiError(ErrorCode.fenced_instance_id,
                                    f"instance id {group_instance_id!r} now belongs to member {owner!r}, not"
                                    f" {member_id!r}")
        member = group.members.get(member_id)
        if member is None:
            raise KafkaApiError(ErrorCode.unknown_member_id, f"member {member_id!r} is not in group {group.group_id!r}")
        return member
