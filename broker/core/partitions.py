"""`PartitionManager`: every partition log this broker holds, and the two ways data gets into them.

Apache Kafka's ReplicaManager / Partition play this role: the leader append path (leadership check,
record-batch limits, idempotence against the log's producer state, append stamped with the leader epoch,
then the role's high-watermark and purgatory bookkeeping) and the follower append path (the leader's
batches kept with the leader's offsets and epochs). Each log owns its producer state and its leader-epoch
cache (`leader-epoch-checkpoint`); the role (`broker/core/role.py`) says what leading means here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kio.schema.errors import ErrorCode

from broker.coordinator import producers
from broker.core.notifier import DataNotifier
from broker.core.role import ClusterRole, TopicPartition
from broker.log_store import AppendResult, LogConfig, LogStore, PartitionLog
from broker.protocol import records
from broker.protocol.control import encode_marker
from broker.protocol.errors import KafkaApiError
from broker.topics import Topic

log = logging.getLogger("broker.partitions")


@runtime_checkable
class ReconfigurableStore(Protocol):
    """A store that can take new topic configs for an open log (retention, segments, timestamp type)."""

    def reconfigure(self, topic: str, partition: int, config: LogConfig) -> None: ...


@dataclass(frozen=True, slots=True)
class LeaderAppend:
    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime (or the batches were retries)
    log_start_offset: int
    end_offset: int  # the offset after the last appended (or acknowledged retried) record


class PartitionManager:
    def __init__(self, store: LogStore, notifier: DataNotifier, log_config: Callable[[Topic], LogConfig]) -> None:
        self.store = store
        self.notifier = notifier
        self._log_config = log_config
        self.role: ClusterRole  # set by BrokerState.role
        self._logs: dict[TopicPartition, PartitionLog] = {}

    # --- the logs ---------------------------------------------------------------------------------
    def log(self, topic: Topic, partition: int) -> PartitionLog:
        if not 0 <= partition < topic.partitions:
            raise KafkaApiError(
                ErrorCode.unknown_topic_or_partition, f"topic {topic.name!r} has no partition {partition}"
            )
        key = (topic.name, partition)
        found = self._logs.get(key)
        if found is None:
            found = self._logs[key] = self.store.open(topic.name, partition, self._log_config(topic))
        return found

    def load_all(self, topics: Iterable[Topic]) -> list[PartitionLog]:
        """Open every partition of `topics` at once (recovered in parallel where the store can)."""
        wanted = [(topic.name, index, self._log_config(topic)) for topic in topics for index in range(topic.partitions)]
        opened = self.store.open_all(wanted)
        for key, plog in opened.items():
            self._logs.setdefault(key, plog)
        return list(opened.values())

    def is_open(self, tp: TopicPartition) -> bool:
        return tp in self._logs

    def open_logs(self) -> list[tuple[TopicPartition, PartitionLog]]:
        """The partition logs open on this broker (a copy: for metrics and reports, never for changes)."""
        return list(self._logs.items())

    def delete(self, topic: Topic) -> None:
        for index in range(topic.partitions):
            plog = self._logs.pop((topic.name, index), None)
            if plog is not None:
                plog.close()
            self.store.delete(topic.name, index)
        self.notifier.notify()

    def reconfigure(self, topic: Topic) -> None:
        """Open logs of `topic` take its current configs at once, when the store can."""
        if isinstance(self.store, ReconfigurableStore):
            config = self._log_config(topic)
            for index in range(topic.partitions):
                if (topic.name, index) in self._logs:
                    self.store.reconfigure(topic.name, index, config)

    # --- the leader append path ---------------------------------------------------------------------
    def append_as_leader(self, topic: Topic, partition: int, data: bytes | None,
                         max_message_bytes: int) -> LeaderAppend:
        """Produce: validate, drop retries (acknowledged with their original offsets), append."""
        self.role.check_leader((topic.name, partition))
        plog = self.log(topic, partition)
        if not data:
            raise KafkaApiError(ErrorCode.corrupt_message, "produce request without record data")
        headers = list(records.iter_batches(data))
        for header in headers:
            if header.is_control:  # Kafka's LogValidator: markers come from the transaction coordinator only
                raise KafkaApiError(ErrorCode.invalid_record,
                                    "clients may not write control records (transaction markers)")
            if header.length > max_message_bytes:
                raise KafkaApiError(
                    ErrorCode.message_too_large,
                    f"record batch of {header.length} bytes is over max.message.bytes={max_message_bytes} of"
                    f" topic {topic.name!r}",
                )
        duplicates = [producers.check(plog.producers, topic.name, partition, header) for header in headers]
        if duplicates and all(d is not None for d in duplicates):
            first, last = duplicates[0], duplicates[-1]
            assert first is not None and last is not None
            return LeaderAppend(first.base_offset, -1, plog.log_start_offset, last.last_offset + 1)
        result = self.append_records(topic, partition, data, client=True)
        return LeaderAppend(result.base_offset, result.log_append_time, result.log_start_offset,
                            result.last_offset + 1)

    def append_records(self, topic: Topic, partition: int, data: bytes, client: bool = False) -> AppendResult:
        """Append as the leader, stamped with its epoch (also the coordinator's own records)."""
        plog = self.log(topic, partition)
        tp = (topic.name, partition)
        # The log updates producer state; `client`: a producer's batch, else a coordinator's (no sequence).
        result = plog.append(data, leader_epoch=self.role.leader_epoch(tp), client=client)
        self.role.on_leader_append(tp, plog.log_end_offset)
        self.notifier.notify()  # fetches (followers' too) long-poll for it
        return result

    def write_marker(self, topic: Topic, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> int:
        """Append the transaction coordinator's COMMIT or ABORT marker for a producer as the leader; returns
        its offset. Fenced like Kafka's `ProducerAppendInfo.appendEndTxnMarker`: an epoch older than the
        producer's here is INVALID_PRODUCER_EPOCH, an older coordinator epoch TRANSACTION_COORDINATOR_FENCED."""
        self.role.check_leader((topic.name, partition))
        entry = self.log(topic, partition).producers.entries.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            raise KafkaApiError(ErrorCode.invalid_producer_epoch,
                                f"marker of producer {producer_id} at epoch {producer_epoch} on"
                                f" {topic.name}-{partition} is older than its epoch {entry.epoch} here")
        if entry is not None and coordinator_epoch < entry.coordinator_epoch:
            raise KafkaApiError(ErrorCode.transaction_coordinator_fenced,
                                f"marker of producer {producer_id} from coordinator epoch {coordinator_epoch} on"
                                f" {topic.name}-{partition}: one of epoch {entry.coordinator_epoch} came before")
        marker = encode_marker(producer_id, producer_epoch, commit, coordinator_epoch, int(time.time() * 1000))
        return self.append_records(topic, partition, marker).base_offset

    @staticmethod
    def last_stable_offset(plog: PartitionLog, high_watermark: int) -> int:
        """The last stable offset (LSO): below it every transaction is decided and its marker replicated, so
        read_committed consumers read up to it. min(high watermark, first unstable offset), where a
        transaction counts as unstable until the high watermark passes its marker (Kafka's UnifiedLog)."""
        first_unstable = plog.producers.first_unstable_offset(high_watermark)
        return high_watermark if first_unstable is None else min(high_watermark, first_unstable)

    # --- the follower append path -------------------------------------------------------------------
    def append_as_follower(self, tp: TopicPartition, plog: PartitionLog, data: bytes) -> list[bytes]:
        """Append the leader's batches with the leader's offsets and epochs; returns the batches appended.
        Stops at a gap (the next fetch asks again from our log end)."""
        appended: list[bytes] = []
        view = memoryview(data)
        for header in records.iter_batches(view):
            if header.base_offset + header.last_offset_delta < plog.log_end_offset:
                continue  # already have it
            if header.base_offset < plog.log_end_offset == plog.log_start_offset:
                # Our log is empty, restarted at the leader's log start, which falls inside this batch: hold the
                # whole batch, as the leader does (our log start moves to the leader's right after).
                plog.restart_at(header.base_offset)
            if header.base_offset != plog.log_end_offset:
                log.warning("%s-%s: leader sent offset %d, our log ends at %d; refetching",
                            tp[0], tp[1], header.base_offset, plog.log_end_offset)
                break
            batch = bytes(view[header.position : header.position + header.length])
            plog.append_replicated(batch)  # as the leader wrote it; the log updates producer state and epochs
            appended.append(batch)
        self.notifier.notify()
        return appended
