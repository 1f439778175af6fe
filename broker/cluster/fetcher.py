"""Follower side of replication: one fetcher per leader broker, fetching all its partitions we follow.

Like Kafka's ReplicaFetcherThread: a Fetch (v12) with `replica_id` = this broker, the fetch offset
= our log end offset and `last_fetched_epoch` = our latest leader epoch. The leader answers records
(appended here with the offsets and leader epochs it gave them), its high watermark, or a
`diverging_epoch` when our log has a suffix the leader does not: we truncate to where the epoch
ends on both sides and fetch again.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
import ssl
import struct
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.fetch.v12.response import FetchResponse
from kio.serial import entity_reader
from kio.static.primitive import i32, i64

from broker.cluster.replicas import ReplicaManager, TopicPartition
from broker.coordinator.offsets_topic import OFFSETS_TOPIC, apply_batch
from broker.coordinator.transactions_topic import TRANSACTIONS_TOPIC
from broker.coordinator.transactions_topic import apply_batch as apply_transactions
from broker.core.state import BrokerState
from broker.log_store import PartitionLog
from broker.protocol.framing import RequestHeader, encode_request
from broker.replication.leader_epochs import EpochEnd, epoch_cache, truncate_on_diverging
from broker.tasks import cancel_and_wait

log = logging.getLogger("broker.cluster")
_FETCH_KEY, _FETCH_VERSION = 1, 12
_MAX_WAIT = datetime.timedelta(milliseconds=500)
_RESPONSE_READER = entity_reader(FetchResponse)


class LeaderFetcher:
    def __init__(
        self, node_id: int, leader_id: int, address: Callable[[], tuple[str, int] | None], state: BrokerState,
        replicas: ReplicaManager, tls: ssl.SSLContext | None = None,
    ) -> None:
        self.node_id = node_id
        self.tls = tls  # set when the inter-broker listener is SSL (inter.broker.listener.name)
        self.leader_id = leader_id
        self.address = address
        self.state = state
        self.replicas = replicas
        self.partitions: dict[TopicPartition, int] = {}  # -> the leader epoch we follow
        self._correlation = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            await cancel_and_wait([self._task], 2.0, f"fetcher from broker {self.leader_id}")

    async def _run(self) -> None:
        while self.partitions and not self._stopped:
            target = self.address()
            if target is None:
                await asyncio.sleep(0.2)
                continue
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(
                    *target, limit=1 << 20, ssl=self.tls, server_hostname=target[0] if self.tls else None), 2.0)
            except (OSError, TimeoutError) as exc:
                # An ssl.SSLError (an OSError) is worth a line: a certificate problem never heals by retrying.
                if isinstance(exc, ssl.SSLError):
                    log.warning("TLS handshake with broker %s failed: %s", self.leader_id, exc)
                await asyncio.sleep(0.2)
                continue
            try:
                while self.partitions and not self._stopped:
                    await self._fetch_once(reader, writer)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ConnectionError) as exc:
                log.info("follower fetch from broker %s failed: %s; reconnecting", self.leader_id, exc)
                await asyncio.sleep(0.2)
            except Exception:
                log.exception("follower fetch from broker %s failed; reconnecting", self.leader_id)
                await asyncio.sleep(0.5)
            finally:
                writer.close()

    def _request(self) -> FetchRequest:
        by_topic: dict[str, list[FetchPartition]] = {}
        for (topic_name, index), epoch in sorted(self.partitions.items()):
            topic = self.state.topics.get(topic_name)
            if topic is None:
                continue
            plog = self.state.partitions.log(topic, index)
            by_topic.setdefault(topic_name, []).append(FetchPartition(
                partition=i32(index), current_leader_epoch=i32(epoch), fetch_offset=i64(plog.log_end_offset),
                last_fetched_epoch=i32(epoch_cache(plog).latest_epoch()), log_start_offset=i64(plog.log_start_offset),
                partition_max_bytes=i32(8 << 20),
            ))
        return FetchRequest(
            replica_id=self.node_id, max_wait=_MAX_WAIT, min_bytes=i32(1), max_bytes=i32(32 << 20),  # type: ignore[arg-type]
            topics=tuple(FetchTopic(topic=name, partitions=tuple(parts)) for name, parts in by_topic.items()),  # type: ignore[arg-type]
            forgotten_topics_data=(),
        )

    async def _fetch_once(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = self._request()
        if not request.topics:
            await asyncio.sleep(0.1)
            return
        correlation = next(self._correlation)
        writer.write(encode_request(RequestHeader(_FETCH_KEY, _FETCH_VERSION, correlation, "replica-fetcher"), request))
        await writer.drain()
        (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 30))
        data = await asyncio.wait_for(reader.readexactly(size), 30)
        response, _ = _RESPONSE_READER(data, 5)  # correlation id (4) + empty tagged fields (1)
        backoff = False
        for topic_response in response.responses:
            for part in topic_response.partitions:
                tp = (topic_response.topic, int(part.partition_index))
                if tp not in self.partitions:
                    continue  # leadership changed while the fetch was in flight
                backoff |= self._apply(tp, part)
        if backoff:
            await asyncio.sleep(0.1)

    def _apply(self, tp: TopicPartition, part: Any) -> bool:
        """Apply one partition's answer; returns whether to back off before the next fetch."""
        topic = self.state.topics.get(tp[0])
        if topic is None:
            return True
        plog = self.state.partitions.log(topic, tp[1])
        if part.error_code == ErrorCode.offset_out_of_range:
            if plog.log_end_offset < part.log_start_offset:  # retention or DeleteRecords on the leader passed us
                log.warning("%s-%s: our log ends at %d, before the leader's log start %d; restarting it there",
                            tp[0], tp[1], plog.log_end_offset, part.log_start_offset)
                plog.restart_at(int(part.log_start_offset))
                return False
            if plog.log_end_offset > part.high_watermark >= 0:
                self._truncate(tp, plog, int(part.high_watermark))
                return False
        if part.error_code != ErrorCode.none:
            return True  # not (yet) the leader as we think, or fenced: the next metadata update fixes it
        diverging = part.diverging_epoch
        if diverging.epoch >= 0 or diverging.end_offset >= 0:
            answer = EpochEnd(int(diverging.epoch), int(diverging.end_offset))
            self._truncate(tp, plog, truncate_on_diverging(epoch_cache(plog), plog.log_end_offset, answer))
            return False
        if part.records:
            self._append(tp, plog, bytes(part.records))
        high = self.replicas.follower_hw[tp] = min(int(part.high_watermark), plog.log_end_offset)
        # The leader's log start (DeleteRecords, retention) moves ours too, never past what is committed.
        if min(int(part.log_start_offset), high) > plog.log_start_offset:
            plog.delete_records_before(min(int(part.log_start_offset), high))
        return False

    def _append(self, tp: TopicPartition, plog: PartitionLog, data: bytes) -> None:
        for batch in self.state.partitions.append_as_follower(tp, plog, data):
            # A follower keeps the coordinators' state warm for a failover.
            if tp[0] == OFFSETS_TOPIC:
                apply_batch(batch, self.state.offsets, self.state.groups.store.load_group)
            elif tp[0] == TRANSACTIONS_TOPIC:
                apply_transactions(batch, self.state.transactions.load)

    def _truncate(self, tp: TopicPartition, plog: PartitionLog, offset: int) -> None:
        if offset >= plog.log_end_offset:
            return
        log.warning("%s-%s: truncating the divergent suffix %d..%d", tp[0], tp[1], offset, plog.log_end_offset)
        plog.truncate_to(offset)  # the log rebuilds its producer state from what remains
