"""The groups' durability (Kafka's GroupMetadataManager): every completed rebalance is stored through the
`journal` as a group metadata record in `__consumer_offsets` before the members get their assignments; every
replica of that partition loads the records (`load_group`), and the broker that becomes the group's
coordinator takes the stored group (Stable, same generation and members, fresh sessions) over whatever older
state it held (`restore`), so members keep heartbeating and committing across a coordinator move or restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from broker.coordinator.group_model import Group, GroupState, Member
from broker.coordinator.offsets_codec import GroupMetadataValue, StoredMember

log = logging.getLogger("broker.groups")
GroupJournal = Callable[[str, GroupMetadataValue | None], Awaitable[None]]


class GroupStore:
    """The newest stored group metadata record per group, and the writes of new ones. Without a `journal`
    (a coordinator in a unit test) nothing is stored and every group lives in memory only."""

    def __init__(self, journal: GroupJournal | None = None) -> None:
        self.journal = journal
        self.stored: dict[str, GroupMetadataValue] = {}
        self._writes: set[asyncio.Task[Exception | None]] = set()

    def load_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        """A group metadata record read from `__consumer_offsets` (replay at start, or replication)."""
        if value is None:
            self.stored.pop(group_id, None)
        else:
            self.stored[group_id] = value

    def restore(self, group_id: str, group: Group | None) -> Group | None:
        """The stored group when it is newer than the one in memory (`group`), as a Stable group whose members'
        sessions start now; otherwise None."""
        stored = self.stored.get(group_id)
        if stored is None or not stored.members or (group is not None and group.generation >= stored.generation):
            return None
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
        return restored

    async def store(self, group: Group, required: bool = False) -> Exception | None:
        """Store the group's current generation; returns the error when `required` (the caller undoes its change),
        otherwise logs it: the group works on in memory and only a coordinator move would lose it."""
        if self.journal is None:
            return None
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
        except Exception as exc:
            log.warning("group %s generation %d not stored in __consumer_offsets: %s", group.group_id,
                        group.generation, exc)
            if required:
                return exc
        return None

    def store_later(self, group_id: str, group: Group | None) -> None:
        """Store (or, with None, delete) from synchronous code: timers and DeleteGroups."""
        if self.journal is None:
            return
        if group is not None:
            task = asyncio.get_running_loop().create_task(self.store(group))
        else:
            task = asyncio.get_running_loop().create_task(self._delete_stored(group_id))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _delete_stored(self, group_id: str) -> Exception | None:
        assert self.journal is not None
        try:
            await self.journal(group_id, None)
            self.stored.pop(group_id, None)
        except Exception as exc:
            log.warning("group %s: tombstone not written to __consumer_offsets: %s", group_id, exc)
        return None
