"""The leader's view of one partition's replicas (Kafka's `Partition` on the leader side).

Clock-free: every call takes `now_ms`. The leader records each follower fetch (`on_follower_fetch`:
the fetch offset is that follower's log end offset), and the state derives:
- the high watermark = min LEO over the ISR (never moves backwards);
- ISR shrink: an ISR follower that has not caught up to the leader's LEO within
  `replica.lag.time.max.ms` is proposed for removal;
- ISR expand: a follower whose LEO reaches the high watermark (and the current epoch's start) is
  proposed for addition.
ISR changes are *proposals* (`pending_isr`): the controller must accept them (AlterPartition) and
the result comes back through `apply_leader_and_isr`, as in Kafka. While a proposal is unresolved the
high watermark waits for every replica of the committed ISR *and* of the proposal (Kafka's "maximal
ISR", KIP-497): the controller may already have let a joining follower in, and any ISR member may be
elected leader, so nothing it lacks may count as acknowledged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.replication.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
)


@dataclass
class ReplicaState:
    leo: int = 0
    last_caught_up_ms: int = 0  # last time this replica's LEO reached the leader's LEO
    last_fetch_leader_leo: int = 0  # the leader's LEO at this replica's previous fetch
    last_fetch_ms: int = 0
    log_start: int = 0  # the log start offset this replica reported with its last fetch


@dataclass
class PartitionReplication:
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30_000
    leader_epoch_start_offset: int = 0
    high_watermark: int = 0
    partition_epoch: int = 0  # of the committed state `isr` belongs to; AlterPartition names it
    # An ISR sent to the controller and not yet resolved: until the partition's epoch moves (the controller
    # applied it, or another change made it stale) or the controller refused it outright.
    proposed_isr: tuple[int, ...] | None = None
    replica_state: dict[int, ReplicaState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for r in self.replicas:
            self.replica_state.setdefault(r, ReplicaState())

    @property
    def leader_leo(self) -> int:
        return self.replica_state[self.leader_id].leo

    def check_epoch(self, epoch: int) -> None:
        """Validate a client's or follower's `current_leader_epoch` (-1 = not given)."""
        if epoch == -1 or epoch == self.leader_epoch:
            return
        if epoch < self.leader_epoch:
            raise FencedLeaderEpoch(f"request epoch {epoch} is older than the leader epoch {self.leader_epoch}")
        raise UnknownLeaderEpoch(f"request epoch {epoch} is newer than the leader epoch {self.leader_epoch}")

    def check_produce(self, acks: int, now_ms: int | None = None) -> None:
        """Before append: acks=all needs at least min.insync.replicas in the ISR.

        With `now_ms`, ISR members that have not caught up within replica.lag.time.max.ms do not
        count: the ISR shrink may not have reached the controller yet (or there is no controller
        quorum), and accepting the write would only end in a timeout.
        """
        if acks != -1:
            return
        isr = list(self.isr)
        if now_ms is not None:
            isr = [r for r in isr if r == self.leader_id
                   or now_ms - self.replica_state[r].last_caught_up_ms <= self.replica_lag_time_max_ms]
        if len(isr) < self.min_insync_replicas:
            raise NotEnoughReplicas(
                f"{len(isr)} in-sync replicas {isr} (ISR {list(self.isr)}), fewer than min.insync.replicas="
                f"{self.min_insync_replicas}"
            )

    def on_leader_append(self, new_leo: int, now_ms: int) -> bool:
        """The leader appended up to `new_leo`; returns whether the high watermark moved."""
        st = self.replica_state[self.leader_id]
        st.leo = new_leo
        st.last_caught_up_ms = now_ms
        return self._update_hw()

    def on_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int, log_start: int = -1) -> bool:
        """A follower fetched from `fetch_offset` (its LEO) with its log starting at `log_start` (-1: not
        told); returns whether the high watermark or the follower's log start moved."""
        if replica_id not in self.replica_state:
            raise NotLeaderOrFollower(f"broker {replica_id} is not a replica of this partition {self.replicas}")
        st = self.replica_state[replica_id]
        start_moved = log_start >= 0 and log_start != st.log_start
        if log_start >= 0:
            st.log_start = log_start
        st.leo = min(fetch_offset, self.leader_leo)
        if st.leo >= self.leader_leo:
            st.last_caught_up_ms = now_ms
        elif st.leo >= st.last_fetch_leader_leo:
            # Under steady writes a follower is never exactly at the LEO; as Kafka does, it counts as
            # caught up at its previous fetch if it now has everything the leader had then.
            st.last_caught_up_ms = max(st.last_caught_up_ms, st.last_fetch_ms)
        st.last_fetch_leader_leo = self.leader_leo
        st.last_fetch_ms = now_ms
        return self._update_hw() or start_moved

    def low_watermark(self, leader_log_start: int, live: set[int]) -> int:
        """The lowest log start over this leader and every follower on a live broker (Kafka's
        `Partition.lowWatermarkIfLeader`): DeleteRecords is done once it reaches the requested offset, so no
        replica that may lead next still serves the deleted records."""
        starts = [self.replica_state[r].log_start for r in self.replicas if r != self.leader_id and r in live]
        return min([leader_log_start, *starts])

    def maximal_isr(self) -> set[int]:
        """The replicas the high watermark waits for: the committed ISR and the one proposed."""
        return set(self.isr) | set(self.proposed_isr or ())

    def propose_isr(self, isr: tuple[int, ...]) -> None:
        """The leader sends `isr` to the controller (AlterPartition at `partition_epoch`)."""
        self.proposed_isr = isr

    def proposal_refused(self) -> None:
        """The controller refused the proposal without changing anything (e.g. a fenced joiner)."""
        self.proposed_isr = None

    def _update_hw(self) -> bool:
        new = min(self.replica_state[r].leo for r in self.maximal_isr())
        if new > self.high_watermark:
            self.high_watermark = new
            return True
        return False

    def pending_isr(self, now_ms: int) -> tuple[int, ...] | None:
        """The ISR the leader should propose to the controller now, or None when it is right."""
        keep = [
            r for r in self.isr
            if r == self.leader_id or now_ms - self.replica_state[r].last_caught_up_ms <= self.replica_lag_time_max_ms
        ]
        # A follower rejoins once it has everything the ISR has acknowledged and all of this epoch's start.
        join = [
            r for r in self.replicas
            if r not in self.isr
            and self.replica_state[r].leo >= max(self.high_watermark, self.leader_epoch_start_offset)
            and now_ms - self.replica_state[r].last_caught_up_ms <= self.replica_lag_time_max_ms
        ]
        new = tuple(r for r in self.replicas if r in keep or r in join)
        return None if set(new) == set(self.isr) else new

    def acks_all_satisfied(self, required_offset: int) -> bool:
        """An acks=all produce ending at `required_offset` completes when the HW passes it."""
        return self.high_watermark >= required_offset

    def acks_all_done(self, required_offset: int) -> bool:
        """Whether an acks=all produce ending at `required_offset` can be answered now.

        Raises `NotEnoughReplicasAfterAppend` when the HW passed it only because the ISR shrank
        below min.insync.replicas: the data is written but not as durable as the producer asked.
        """
        if not self.acks_all_satisfied(required_offset):
            return False
        if len(self.isr) < self.min_insync_replicas:
            raise NotEnoughReplicasAfterAppend(
                f"written, but the ISR {list(self.isr)} shrank below min.insync.replicas={self.min_insync_replicas}"
            )
        return True

    def apply_leader_and_isr(self, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int) -> None:
        """The controller's committed state of the partition (applied on every metadata update)."""
        if leader_epoch < self.leader_epoch:
            raise FencedLeaderEpoch(f"stale LeaderAndIsr: epoch {leader_epoch} < {self.leader_epoch}")
        if partition_epoch != self.partition_epoch:
            self.proposed_isr = None  # resolved: it is this state, or the controller can no longer apply it
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.isr = isr
        self._update_hw()
