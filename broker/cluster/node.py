"""One broker of a cluster: runs its controller quorum member (if a voter), registers and heartbeats,
follows the committed metadata log, and turns partition changes into leader/follower roles.

Brokers reach each other through the inter-broker listener and the quorum through the controller listener
(Kafka's `inter.broker.listener.name` and `controller.listener.names`), over TLS when that listener is SSL:
the contexts are built here, once, from the listener's `ssl.*` settings (broker/security/tls.py)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from broker.cluster.controller_client import ControllerClient, ControllerRejected, ControllerUnavailable
from broker.cluster.fetcher import LeaderFetcher
from broker.cluster.producer_ids import ProducerIdBlocks
from broker.cluster.replicas import ReplicaManager, TopicPartition, now_ms
from broker.cluster.topic_admin import TopicAdmin
from broker.cluster.topic_sync import sync_topic
from broker.config import BrokerConfig, ConfigError, parse_voters
from broker.controller import records as r
from broker.controller.quorum import CommittedRecords
from broker.controller.snapshot import from_snapshot
from broker.controller.state import MetadataState, PartitionInfo
from broker.coordinator.offsets_topic import OFFSETS_TOPIC, partition_for
from broker.core.state import BrokerState
from broker.replication.partition import PartitionReplication
from broker.security.listeners import advertised, advertised_endpoints, controller_protocol, inter_broker_listener
from broker.security.tls import client_context, server_context
from broker.tasks import cancel_and_wait

if TYPE_CHECKING:
    from broker.controller.tcp_node import TcpController

log = logging.getLogger("broker.cluster")
_METADATA_POLL_S = 0.05
_ISR_CHECK_S = 0.2


def _in_partition(index: int, partitions: int, group: str) -> bool:
    return partition_for(group, partitions) == index


class ClusterNode:
    def __init__(self, config: BrokerConfig, state: BrokerState) -> None:
        self.config = config
        self.state = state
        self.node_id = config.node_id
        self.voters = parse_voters(config.get("controller.quorum.voters"))
        roles = {role.strip() for role in config.get("process.roles").split(",")}
        self.is_voter = "controller" in roles and self.node_id in self.voters
        if "controller" in roles and self.node_id not in self.voters:
            raise ConfigError(
                f"process.roles has controller but node.id={self.node_id} is not in controller.quorum.voters"
            )
        controller_listener, controller_security = controller_protocol(config)
        quorum_tls = controller_security == "SSL"
        self.controller_tls = client_context(config, controller_listener) if quorum_tls else None
        self.controller_server_tls = (server_context(config, controller_listener)
                                      if quorum_tls and self.is_voter else None)
        self.inter_broker = inter_broker_listener(config)
        self.inter_broker_tls = client_context(config, self.inter_broker.name) if self.inter_broker.uses_tls else None
        self.client = ControllerClient(self.voters, tls=self.controller_tls)
        self.metadata_client = ControllerClient(self.voters, tls=self.controller_tls)
        self.meta = MetadataState()
        self.meta_index = 0
        self.topic_admin = TopicAdmin(self)
        self.producer_ids = ProducerIdBlocks(self)
        self.replicas = ReplicaManager(self.node_id)
        self.fetchers: dict[int, LeaderFetcher] = {}
        self.controller: TcpController | None = None
        self._isr_in_flight: set[TopicPartition] = set()
        self._seen_commit = 0  # the local quorum member's commit index when we last read it
        self._registered_at: int | None = None  # Raft index of our registration
        # Tells the controller this is a new process: one that may have lost unflushed or damaged records.
        self.incarnation = uuid.uuid4().hex
        self._roles_taken = False  # whether _reconcile ran since our registration was applied
        self._strays_pending = False  # a snapshot was loaded: local topics may have been deleted meanwhile
        # Set once this broker has applied the metadata up to its own registration: before that it
        # would answer Metadata requests from a stale view, so the Kafka listener waits for it.
        self.ready = asyncio.Event()
        # Notified whenever metadata was applied: waits for a change to arrive use it instead of polling.
        self.applied = asyncio.Condition()
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        if self.is_voter:
            from broker.controller.tcp_node import TcpController

            self.controller = TcpController(
                self.node_id, self.voters, self.config.data_dir / "__cluster_metadata",
                tls_server=self.controller_server_tls, tls_client=self.controller_tls,
                session_timeout_ms=self.config.int("broker.session.timeout.ms"),
                unclean_leader_election=self.config.bool("unclean.leader.election.enable"),
                election_timeout_ms=(1000, 2000), heartbeat_ms=100,
                max_record_bytes_between_snapshots=self.config.int("metadata.log.max.record.bytes.between.snapshots"),
            )
            self.spawn(self.controller.run(self._stop))
        for loop in (self._heartbeat_loop, self._metadata_loop, self._isr_loop):
            self.spawn(loop())

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.append(task)
        task.add_done_callback(lambda done: self._tasks.remove(done) if done in self._tasks else None)

    async def close(self) -> None:
        # Controlled shutdown: leaderships move now rather than after a session timeout. Bounded: with
        # the whole cluster stopping there may be no controller left to answer.
        log.info("controlled shutdown: handing over leaderships", extra={"node": self.node_id})
        try:
            await asyncio.wait_for(self._controlled_shutdown(), 5.0)
            log.info("controlled shutdown: leaderships handed over", extra={"node": self.node_id})
        except Exception as exc:  # any failure only means leaders move after the session timeout
            log.warning("controlled shutdown not acknowledged (%s); leaderships move after the session timeout",
                        exc or type(exc).__name__)
        self._stop.set()
        for fetcher in self.fetchers.values():
            await fetcher.stop()
        await cancel_and_wait(list(self._tasks), 5.0, "cluster node shutdown")
        self.client.close()
        self.metadata_client.close()

    async def _controlled_shutdown(self) -> None:
        # Like Kafka's, done only when the controller's decision is committed and applied here: until
        # then this broker still leads and serves its partitions.
        answer = await self.client.call("shutdown", deadline_s=2.0, broker_id=self.node_id)
        await self.wait_applied(int(answer.get("index", 0)), 5.0, "the controlled shutdown")

    # --- broker registration and heartbeats ------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        # Kafka's registration: the inter-broker listener's address (what followers fetch from) and every
        # listener's, so clients are told the address of the listener they use.
        host, port = advertised(self.config, self.inter_broker.name)
        endpoints = [list(endpoint) for endpoint in advertised_endpoints(self.config)]
        rack = self.config.get("broker.rack") or None
        # At least three heartbeats per session, so one slow heartbeat never fences a live broker.
        interval = min(self.config.int("broker.heartbeat.interval.ms"),
                       self.config.int("broker.session.timeout.ms") // 3) / 1000
        registered = False
        while not self._stop.is_set():
            try:
                if not registered:
                    answer = await self.client.call("register", broker_id=self.node_id, host=host, port=port,
                                                    rack=rack, incarnation=self.incarnation, endpoints=endpoints)
                    self._registered_at = int(answer.get("index", 0))
                    registered = True
                    log.info("registered with the controller", extra={"node": self.node_id})
                else:
                    await self.client.call("heartbeat", deadline_s=interval * 2, broker_id=self.node_id)
            except (ControllerUnavailable, ControllerRejected) as exc:
                log.warning("controller heartbeat failed: %s", exc)
            # A restarted broker is registered fenced and serves nothing until a heartbeat unfences it:
            # ask again soon rather than a whole interval later.
            await asyncio.sleep(min(interval, 0.1) if registered and not self.ready.is_set() else interval)

    # --- metadata ----------------------------------------------------------------------------
    async def _committed_records(self) -> CommittedRecords:
        if self.controller is not None:
            self._seen_commit = self.controller.ctl.raft.commit_index
            return self.controller.ctl.committed_records(self.meta_index)
        answer = await self.metadata_client.call("records", deadline_s=2.0, **{"from": self.meta_index})
        records = [(int(i), d) for i, d in answer["records"]]
        if answer.get("snapshot") is None:
            return CommittedRecords(records)
        return CommittedRecords(records, int(answer["snapshot_index"]), answer["snapshot"])

    def _load_snapshot(self, index: int, data: dict[str, Any]) -> None:
        """Replace the metadata by a snapshot (the log before `index` was compacted away): as if the records
        it replaces had been applied, topics it no longer has (or has under a new id) are deleted here."""
        new = from_snapshot(data)
        for name, info in self.meta.topics.items():
            kept = new.topics.get(name)
            if kept is None or kept.topic_id != info.topic_id:
                self._forget_topic(name)
        self.meta, self.meta_index = new, index
        # Topics deleted while this process was away left their logs here, and the snapshot no longer holds
        # the DeleteTopic that would remove them: they are found once the metadata includes our registration.
        self._strays_pending = True
        log.info("loaded the metadata snapshot at index %d", index, extra={"node": self.node_id})

    def _forget_strays(self) -> None:
        """Delete local topics the metadata does not have (Kafka's stray replicas, found when a broker loads
        its first metadata image after a restart): run with metadata that includes this process's own
        registration, so every topic deleted before it started is known to be gone."""
        for topic in self.state.topics.all():
            if topic.name not in self.meta.topics:
                log.info("deleting topic %s: the cluster metadata no longer has it", topic.name,
                         extra={"node": self.node_id})
                self._forget_topic(topic.name)

    async def _metadata_loop(self) -> None:
        while not self._stop.is_set():
            batch: list[tuple[int, dict[str, Any]]] = []
            loaded = False  # a snapshot is progress too: read on at once
            try:
                got = await self._committed_records()
                batch = got.records
                changed = False
                if got.snapshot is not None and got.snapshot_index is not None:
                    self._load_snapshot(got.snapshot_index, got.snapshot)
                    changed = loaded = True
                for index, data in batch:
                    record = r.from_dict(data)
                    self.meta.apply(record)
                    self.meta_index = index
                    # Heartbeats are most of the log and change no role: no reconcile for them.
                    changed |= not isinstance(record, r.BrokerHeartbeat)
                    if isinstance(record, r.DeleteTopic):
                        self._forget_topic(record.name)
                # Roles come only from metadata that includes our own registration: a restarted broker
                # replaying the log would otherwise lead its old partitions at their old epochs with a log
                # that recovery may have shortened, and followers would truncate to it.
                if self._registered_at is not None and self.meta_index >= self._registered_at:
                    if changed or not self._roles_taken:
                        if self._strays_pending:
                            self._forget_strays()
                            self._strays_pending = False
                        self._reconcile()
                        self._roles_taken = True
                    if not self._fenced(self.node_id):
                        # As Kafka's BrokerServer: client requests are served once the broker is unfenced.
                        self.ready.set()
            except ControllerUnavailable as exc:
                log.warning("cannot read cluster metadata: %s", exc)
            except Exception:
                log.exception("applying cluster metadata failed; retrying")
            if batch or loaded:
                async with self.applied:
                    self.applied.notify_all()
            else:
                await self._wait_for_commits()

    async def _wait_for_commits(self) -> None:
        if self.controller is None:
            await asyncio.sleep(_METADATA_POLL_S)  # a broker-only node asks a voter over TCP
            return
        # A voter reads its own quorum member: look again as soon as its commit index moves.
        committed: asyncio.Event = self.controller.committed
        if self.controller.ctl.raft.commit_index <= self._seen_commit:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(committed.wait(), 1.0)
        committed.clear()

    def _forget_topic(self, name: str) -> None:
        for tp in [tp for tp in self.replicas.leaders if tp[0] == name]:
            self.replicas.stop_leading(tp)
        for fetcher in self.fetchers.values():
            for tp in [tp for tp in fetcher.partitions if tp[0] == name]:
                del fetcher.partitions[tp]
        if self.state.topics.get(name) is not None:
            self.state.delete_topic(name)
            self.state.offsets.delete_topic(name)

    def _reconcile(self) -> None:
        """Make local topics and replica roles match the metadata (Kafka's LeaderAndIsr handling)."""
        for info in list(self.meta.topics.values()):
            topic = sync_topic(self.state, info, self.meta.configs.get(f"topic:{info.name}", {}))
            for index, part in enumerate(info.partitions):
                tp = (info.name, index)
                if info.name == OFFSETS_TOPIC and self.replicas.is_leader(tp) != (part.leader == self.node_id):
                    # Coordinator gained or lost: group state is (re)loaded from the partition when next used.
                    self.state.groups.unload(functools.partial(_in_partition, index, len(info.partitions)))
                if self.node_id not in part.replicas:
                    self._unfollow(tp)
                    self.replicas.stop_leading(tp)
                elif part.leader == self.node_id:
                    self._unfollow(tp)
                    plog = self.state.partitions.log(topic, index)
                    self.replicas.become_leader(
                        tp, part.leader_epoch, part.replicas, part.isr, plog.log_end_offset,
                        int(self.state.topic_config(topic, "min.insync.replicas")),
                        self.config.int("replica.lag.time.max.ms"), part.partition_epoch,
                    )
                else:
                    self.replicas.stop_leading(tp)
                    self._follow(tp, part)
        for leader_id, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                del self.fetchers[leader_id]
                self.spawn(fetcher.stop())

    def _follow(self, tp: TopicPartition, part: PartitionInfo) -> None:
        for leader_id, other in self.fetchers.items():
            if leader_id != part.leader:
                other.partitions.pop(tp, None)
        if part.leader < 0:
            return
        fetcher = self.fetchers.get(part.leader)
        if fetcher is None:
            fetcher = self.fetchers[part.leader] = LeaderFetcher(
                self.node_id, part.leader, functools.partial(self.broker_address, part.leader), self.state,
                self.replicas, self.inter_broker_tls,
            )
        fetcher.partitions[tp] = part.leader_epoch
        fetcher.start()

    def _unfollow(self, tp: TopicPartition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.partitions.pop(tp, None)

    def _fenced(self, broker_id: int) -> bool:
        info = self.meta.brokers.get(broker_id)
        return info is None or info.fenced

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        info = self.meta.brokers.get(broker_id)
        return None if info is None or info.fenced else info.address(self.inter_broker.name)

    # --- ISR maintenance (leader side) --------------------------------------------------------------
    async def _isr_loop(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(_ISR_CHECK_S)
            self.replicas.expire()
            now = now_ms()
            for tp, repl in list(self.replicas.leaders.items()):
                if tp in self._isr_in_flight:
                    continue
                # An unresolved proposal is sent again (it may never have reached the controller) rather
                # than replaced: the high watermark waits for its joiners until the controller answers.
                wanted = repl.proposed_isr or repl.pending_isr(now)
                if wanted is not None and repl.proposed_isr is None:  # a fenced broker cannot join yet
                    wanted = tuple(b for b in wanted if b in repl.isr or not self._fenced(b))
                if wanted is None or (set(wanted) == set(repl.isr) and repl.proposed_isr is None):
                    continue
                repl.propose_isr(wanted)
                self._isr_in_flight.add(tp)
                self.spawn(self._alter_isr(tp, repl, wanted))

    async def _alter_isr(self, tp: TopicPartition, repl: PartitionReplication, isr: tuple[int, ...]) -> None:
        epoch, partition_epoch = repl.leader_epoch, repl.partition_epoch
        try:
            log.info("proposing ISR %s for %s-%s", list(isr), tp[0], tp[1])
            await self.client.call("alter_partition", deadline_s=3.0, topic=tp[0], partition=tp[1],
                                   leader=self.node_id, leader_epoch=epoch, partition_epoch=partition_epoch,
                                   isr=list(isr))
            # Wait until the change is applied here (which resolves the proposal), so it is not sent again.
            def applied() -> bool:
                part = self.meta.partition(*tp)
                return part is None or part.partition_epoch != partition_epoch or part.leader_epoch != epoch

            await self.wait_for_metadata(applied, 2.0)
        except ControllerRejected as exc:
            # A stale epoch means the partition changed: the metadata update on its way resolves the proposal.
            # Any other refusal (a fenced joiner, say) changed nothing and never will.
            if exc.kafka_error not in ("FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION"):
                repl.proposal_refused()
            log.warning("ISR change for %s-%s not accepted: %s", tp[0], tp[1], exc)
        except ControllerUnavailable as exc:
            log.warning("ISR change for %s-%s not answered: %s; sending it again", tp[0], tp[1], exc)
        finally:
            self._isr_in_flight.discard(tp)

    async def wait_applied(self, index: int, timeout_s: float, what: str) -> None:
        """Until this broker has applied the metadata log up to `index` (a change the controller accepted)."""
        if not await self.wait_for_metadata(lambda: self.meta_index >= index, timeout_s):
            raise ControllerUnavailable(f"{what} was accepted but did not reach this broker in {timeout_s:.0f} s")

    async def wait_for_metadata(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Until `condition()` holds on the metadata applied here (checked as each batch is applied), or
        `timeout_s` passed (False)."""
        async with self.applied:
            try:
                await asyncio.wait_for(self.applied.wait_for(condition), timeout_s)
            except TimeoutError:
                return False
        return True

    def active_controller(self) -> int:
        if self.controller is not None and self.controller.ctl.raft.leader is not None:
            return int(self.controller.ctl.raft.leader)
        return self.client._leader if self.client._leader is not None else min(self.voters)
