"""What the transaction coordinator needs from the broker (`TxnEffects`): its journal in
`__transaction_state`, markers in the transaction's partitions, producer ids.

Markers go through the leader append path of each partition (`PartitionManager.write_marker`) and wait for
the in-sync replicas, as Kafka appends WriteTxnMarkers with acks=all. A marker in a `__consumer_offsets`
partition also ends the producer's staged TxnOffsetCommit offsets (`BrokerState.write_marker`). A partition
whose topic was deleted meanwhile needs no marker (Kafka skips them too). A partition led by another broker
is written with WriteTxnMarkers to that broker (`remote`), which the cluster role supplies.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_topics import TRANSACTION, TRANSACTIONS
from broker.coordinator.transactions_codec import TxnLogValue
from broker.coordinator.transactions_topic import encode_batch
from broker.protocol.errors import KafkaApiError

if TYPE_CHECKING:
    from broker.core.state import BrokerState

TopicPartition = tuple[str, int]
# Markers for partitions this broker does not lead: (producer id, epoch, commit, coordinator epoch, partitions).
RemoteMarkers = Callable[[int, int, bool, int, tuple[TopicPartition, ...]], Awaitable[None]]
_WRITE_TIMEOUT_MS = 5000


class BrokerTxnEffects:
    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.remote: RemoteMarkers | None = None

    def _state_partition(self, transactional_id: str) -> TopicPartition:
        topic = self.state.internal_topic(TRANSACTIONS)
        return TRANSACTIONS.name, TRANSACTIONS.partition(transactional_id, topic.partitions)

    def coordinates(self, transactional_id: str) -> bool:
        try:
            self.state.check_coordinator(transactional_id, TRANSACTION)
        except KafkaApiError:
            return False
        return True

    async def write_state(self, transactional_id: str, value: TxnLogValue) -> None:
        self.state.check_coordinator(transactional_id, TRANSACTION)
        tp = self._state_partition(transactional_id)
        result = self.state.partitions.append_records(self.state.internal_topic(TRANSACTIONS), tp[1],
                                                      encode_batch(transactional_id, value, int(time.time() * 1000)))
        await self.state.role.wait_for_isr(tp, result.last_offset + 1, _WRITE_TIMEOUT_MS)

    async def write_markers(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                            partitions: tuple[TopicPartition, ...]) -> None:
        coordinator_epoch = self.state.role.leader_epoch(self._state_partition(transactional_id))
        elsewhere: list[TopicPartition] = []
        for tp in partitions:
            if self.state.topics.get(tp[0]) is None:
                continue  # deleted since it joined the transaction
            if self._leads(tp):
                await self.state.write_marker(tp, producer_id, epoch, commit, coordinator_epoch, _WRITE_TIMEOUT_MS)
            else:
                elsewhere.append(tp)
        if elsewhere:
            if self.remote is None:
                raise KafkaApiError(ErrorCode.not_leader_or_follower,
                                    f"{elsewhere[0][0]}-{elsewhere[0][1]} is led by another broker")
            await self.remote(producer_id, epoch, commit, coordinator_epoch, tuple(elsewhere))

    def _leads(self, tp: TopicPartition) -> bool:
        try:
            self.state.role.check_leader(tp)
        except KafkaApiError:
            return False
        return True

    async def new_producer_id(self) -> int:
        producer_id, _ = await self.state.role.next_producer_id()
        return producer_id

