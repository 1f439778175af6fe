"""Transaction markers for partitions led by other brokers: WriteTxnMarkers (v1) to each leader, as Kafka's
TransactionMarkerChannelManager sends them from the coordinator.

One short connection per leader and call, on the inter-broker listener (TLS when it uses TLS): markers
are written once per transaction and partition leader, so a connection pool would save little. Any
partition answered with an error fails the call (KafkaApiError with that code); the coordinator keeps the
transaction prepared and retries.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.schema.write_txn_markers.v1.request import WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest
from kio.schema.write_txn_markers.v1.response import WriteTxnMarkersResponse
from kio.serial import entity_reader
from kio.static.primitive import i16, i32

from broker.protocol.errors import KafkaApiError
from broker.protocol.framing import RequestHeader, encode_request

if TYPE_CHECKING:
    from broker.cluster.node import ClusterNode

TopicPartition = tuple[str, int]
_KEY, _VERSION = 27, 1
_TIMEOUT_S = 10.0
_READ_RESPONSE = entity_reader(WriteTxnMarkersResponse)


class MarkerSender:
    def __init__(self, node: ClusterNode) -> None:
        self.node = node
        self._correlation = itertools.count(1)

    async def send(self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int,
                   partitions: tuple[TopicPartition, ...]) -> None:
        by_leader: dict[int, list[TopicPartition]] = {}
        for topic, index in partitions:
            info = self.node.meta.partition(topic, index)
            leader = info.leader if info is not None else -1
            if leader < 0:
                raise KafkaApiError(ErrorCode.leader_not_available, f"{topic}-{index} has no leader now")
            by_leader.setdefault(leader, []).append((topic, index))
        await asyncio.gather(*(self._send_to(leader, producer_id, epoch, commit, coordinator_epoch, tps)
                               for leader, tps in by_leader.items()))

    async def _send_to(self, leader: int, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int,
                       partitions: list[TopicPartition]) -> None:
        address = self.node.broker_address(leader)
        if address is None:
            raise KafkaApiError(ErrorCode.leader_not_available, f"broker {leader} is not reachable now")
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        request = WriteTxnMarkersRequest(markers=(WritableTxnMarker(
            producer_id=producer_id, producer_epoch=i16(epoch), transaction_result=commit,  # type: ignore[arg-type]
            topics=tuple(WritableTxnMarkerTopic(name=t, partition_indexes=tuple(i32(i) for i in ids))  # type: ignore[arg-type]
                         for t, ids in by_topic.items()),
            coordinator_epoch=i32(coordinator_epoch)),))
        tls = self.node.inter_broker_tls
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                *address, ssl=tls, server_hostname=address[0] if tls else None), _TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise KafkaApiError(ErrorCode.network_exception, f"broker {leader}: {exc}") from None
        try:
            header = RequestHeader(_KEY, _VERSION, next(self._correlation), f"txn-coordinator-{self.node.node_id}")
            writer.write(encode_request(header, request))
            await writer.drain()
            (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), _TIMEOUT_S))
            data = await asyncio.wait_for(reader.readexactly(size), _TIMEOUT_S)
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            raise KafkaApiError(ErrorCode.network_exception, f"WriteTxnMarkers to broker {leader}: {exc}") from None
        finally:
            writer.close()
        response, _ = _READ_RESPONSE(data, 5)  # correlation id (4) + empty tagged fields (1)
        for result in response.markers:
            for answered in result.topics:
                for part in answered.partitions:
                    if part.error_code != ErrorCode.none:
                        raise KafkaApiError(part.error_code, f"marker in {answered.name}-{part.partition_index} on"
                                                             f" broker {leader}: {part.error_code.name}")
