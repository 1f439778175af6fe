"""This broker's replicas: leader state per led partition, acks=all waits, the HW it serves.

The replication rules live in `broker.replication` (pure); this module keeps one
`PartitionReplication` per partition this broker leads, parks acks=all produces until the high
watermark passes them (Kafka's produce purgatory) and answers which high watermark a read may see.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.replication.errors import (
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
)
from broker.replication.partition import PartitionReplication
from broker.replication.purgatory import Delayed, Purgatory

TopicPartition = tuple[str, int]


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class ReplicaManager:
    node_id: int
    leaders: dict[TopicPartition, PartitionReplication] = field(default_factory=dict)
    # The high watermark a follower last heard from its leader; where a new leader starts from.
    follower_hw: dict[TopicPartition, int] = field(default_factory=dict)
    purgatory: Purgatory[asyncio.Future[Any]] = field(default_factory=Purgatory)
    # Told (old ISR, new ISR) when the controller's ISR change for a partition led here is applied (metrics).
    isr_listener: Callable[[tuple[int, ...], tuple[int, ...]], None] | None = None

    def is_leader(self, tp: TopicPartition) -> bool:
        return tp in self.leaders

    def leader(self, tp: TopicPartition) -> PartitionReplication:
        repl = self.leaders.get(tp)
        if repl is None:
            raise NotLeaderOrFollower(f"broker {self.node_id} is not the leader of {tp[0]}-{tp[1]}")
        return repl

    def high_watermark(self, tp: TopicPartition) -> int:
        repl = self.leaders.get(tp)
        return repl.high_watermark if repl is not None else self.follower_hw.get(tp, 0)

    def become_leader(
        self, tp: TopicPartition, epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...], leo: int,
        min_insync: int, lag_ms: int, partition_epoch: int,
    ) -> PartitionReplication:
        repl = self.leaders.get(tp)
        if repl is not None and repl.leader_epoch == epoch:
            if self.isr_listener is not None and set(isr) != set(repl.isr):
                self.isr_listener(repl.isr, isr)
            repl.apply_leader_and_isr(epoch, isr, partition_epoch)
            repl.min_insync_replicas = min_insync
            self._complete(tp)
            return repl
        repl = PartitionReplication(
            self.node_id, epoch, replicas, isr, min_insync_replicas=min_insync, replica_lag_time_max_ms=lag_ms,
            leader_epoch_start_offset=leo, high_watermark=min(self.follower_hw.get(tp, 0), leo),
            partition_epoch=partition_epoch,
        )
        start = now_ms()
        for state in repl.replica_state.values():
            state.last_caught_up_ms = start  # every follower gets one lag period from the election
        repl.on_leader_append(leo, start)
        self.leaders[tp] = repl
        self._complete(tp)
        return repl

    def stop_leading(self, tp: TopicPartition) -> None:
        repl = self.leaders.pop(tp, None)
        if repl is not None:
            self.follower_hw[tp] = repl.high_watermark
        self._fail(tp, NotLeaderOrFollower(f"{tp[0]}-{tp[1]}: leadership moved away"))

    def on_leader_append(self, tp: TopicPartition, leo: int) -> None:
        repl = self.leaders.get(tp)
        if repl is not None and repl.on_leader_append(leo, now_ms()):
            self._complete(tp)

    def on_follower_fetch(self, tp: TopicPartition, replica_id: int, fetch_offset: int, log_start: int) -> None:
        if self.leader(tp).on_follower_fetch(replica_id, fetch_offset, now_ms(), log_start):
            self._complete(tp)

    def wait_for_isr(self, tp: TopicPartition, end_offset: int, timeout_ms: int) -> asyncio.Future[None]:
        """A future done when the ISR holds everything below `end_offset` (acks=all)."""
        repl = self.leader(tp)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.purgatory.try_complete_else_watch(
            Delayed((tp,), now_ms() + timeout_ms, lambda: _check(repl, end_offset, future), future)
        )
        return future

    def wait_for_low_watermark(
        self, tp: TopicPartition, offset: int, timeout_ms: int, low_watermark: Callable[[PartitionReplication], int]
    ) -> asyncio.Future[int]:
        """A future with the partition's low watermark once it reaches `offset` (DeleteRecords; Kafka's
        DelayedDeleteRecords): the followers learn the new log start from their next fetch and report it
        with the one after. Rechecked on every follower fetch that moves a log start and every timer tick
        (a follower's broker may stop counting as live)."""
        repl = self.leader(tp)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def ready() -> bool:
            low = low_watermark(repl)
            if low < offset:
                return False
            if not future.done():
                future.set_result(low)
            return True

        self.purgatory.try_complete_else_watch(Delayed((tp,), now_ms() + timeout_ms, ready, future))
        return future

    def _complete(self, tp: TopicPartition) -> None:
        self.purgatory.check(tp)

    def expire(self) -> None:
        now = now_ms()
        for op in self.purgatory.expire(now):
            if not op.payload.done():
                op.payload.set_exception(TimeoutError())
        for tp, repl in self.leaders.items():
            if not self.purgatory.watchers.get(tp):
                continue
            self._complete(tp)  # waits on broker liveness (DeleteRecords) see it change here
            try:
                repl.check_produce(-1, now)
            except NotEnoughReplicas as exc:
                # The followers stopped fetching: the waiting produces would only time out.
                self._fail(tp, NotEnoughReplicasAfterAppend(f"written on the leader only: {exc}"))

    def _fail(self, tp: TopicPartition, error: Exception) -> None:
        for op in self.purgatory.watchers.pop(tp, []):
            if not op.done:
                op.done = True
                if not op.payload.done():
                    op.payload.set_exception(error)


def _check(repl: PartitionReplication, end_offset: int, future: asyncio.Future[None]) -> bool:
    """`ready` of a parked acks=all produce: settles its future once the HW passed it."""
    try:
        if not repl.acks_all_done(end_offset):
            return False
        if not future.done():
            future.set_result(None)
    except NotEnoughReplicasAfterAppend as exc:
        if not future.done():
            future.set_exception(exc)
    return True
