"""A classic group's generations (Kafka's ClassicGroup and GroupCoordinator's rebalance paths):

    Empty --join--> PreparingRebalance --all known members rejoined or rebalance timeout-->
    CompletingRebalance --leader's SyncGroup--> Stable --join/leave/session expiry--> PreparingRebalance
    (any) --last member gone--> Empty ; Empty --DeleteGroups--> Dead

A new (Empty) group waits group.initial.rebalance.delay.ms before completing its first join, so that members
starting together land in one generation. A rebalance completes once every member rejoined and no KIP-394
pending member id remains, or at the rebalance timeout, which drops the dynamic members that did not rejoin
(static members stay until their session times out, KIP-345). The leader of the new generation receives every
member's metadata; assignment is the clients' business.
"""

from __future__ import annotations

import asyncio
import logging
import time

from kio.schema.errors import ErrorCode

from broker.coordinator.group_model import Group, GroupState, JoinedMember, JoinResult, Member, fail
from broker.coordinator.group_store import GroupStore

log = logging.getLogger("broker.groups")


class Rebalancer:
    """Moves groups between generations; `store` keeps a completed generation that emptied the group."""

    def __init__(self, initial_delay: float, store: GroupStore) -> None:
        self.initial_delay = initial_delay
        self.store = store

    @staticmethod
    def common_protocols(group: Group, extra: set[str] | None = None, exclude: str = "") -> list[str]:
        sets = [{name for name, _ in m.protocols} for m in group.members.values() if m.member_id != exclude]
        if extra is not None:
            sets.append(extra)
        if not sets:
            return []
        common = set.intersection(*sets)
        leader = group.members.get(group.leader_id or "") or next(iter(group.members.values()), None)
        order = [name for name, _ in leader.protocols] if leader is not None else sorted(common)
        return [name for name in order if name in common] or sorted(common)

    def remove_member(self, group: Group, member: Member, reason: str) -> None:
        del group.members[member.member_id]
        fail(member.join_future, ErrorCode.unknown_member_id, f"member {reason}")
        fail(member.sync_future, ErrorCode.unknown_member_id, f"member {reason}")
        if group.leader_id == member.member_id:
            group.leader_id = None
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare(group, f"member {member.member_id} {reason}")
        self.maybe_complete_join(group)

    @staticmethod
    def join_result(group: Group, member: Member) -> JoinResult:
        """The JoinGroup answer of the current generation; the leader also gets every member's metadata."""
        assert group.leader_id is not None
        everyone = Rebalancer.joined_members(group) if member.member_id == group.leader_id else ()
        return JoinResult(group.generation, group.protocol_type, group.protocol_name, group.leader_id,
                          member.member_id, everyone)

    def prepare(self, group: Group, reason: str) -> None:
        log.info("preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                 group.group_id, group.state.value, group.generation, reason)
        for member in group.members.values():
            fail(member.sync_future, ErrorCode.rebalance_in_progress, "group is rebalancing")
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
            self.maybe_complete_join(group)
            return
        for member in list(group.members.values()):
            # Static members stay until their session times out (KIP-345): they may be restarting.
            if not member.is_static and (member.join_future is None or member.join_future.done()):
                del group.members[member.member_id]
        self._complete_join(group)

    def maybe_complete_join(self, group: Group) -> None:
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        if not group.members:
            self._complete_join(group)
            return
        all_joined = all(m.join_future is not None and not m.join_future.done() for m in group.members.values())
        if not all_joined or group.pending:
            return
        remaining = group.join_deadline - time.monotonic()
        if remaining > 0:
            if group.timer is not None:
                group.timer.cancel()
            group.timer = asyncio.get_running_loop().call_later(remaining, self._on_join_timeout, group)
            return
        self._complete_join(group)

    @staticmethod
    def joined_members(group: Group) -> tuple[JoinedMember, ...]:
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, dict(m.protocols).get(group.protocol_name or "", b""))
            for m in group.members.values()
        )

    def _complete_join(self, group: Group) -> None:
        if group.timer is not None:
            group.timer.cancel()
            group.timer = None
        group.generation += 1
        if not group.members:
            group.state = GroupState.EMPTY
            group.protocol_name = None
            group.leader_id = None
            if group.group_id in self.store.stored:
                self.store.store_later(group.group_id, group)  # the stored members are gone: never restore them
            return
        common = self.common_protocols(group)
        group.protocol_name = common[0] if common else None
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.state = GroupState.COMPLETING_REBALANCE
        assert group.leader_id is not None
        for member in group.members.values():
            result = self.join_result(group, member)
            if member.join_future is not None and not member.join_future.done():
                member.join_future.set_result(result)
            member.join_future = None
            member.last_heartbeat = time.monotonic()
