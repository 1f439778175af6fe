"""WriteTxnMarkers (27): a transaction coordinator asks this broker, the leader of some of the
transaction's partitions, to write the COMMIT/ABORT markers there (broker to broker, as in Kafka)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.replication.errors import ReplicationError

_TIMEOUT_MS = 5000


async def _write(state: BrokerState, marker: Any, name: str, index: int) -> ErrorCode:
    try:
        state.check_leader(name, index)
        await state.write_marker((name, index), int(marker.producer_id), int(marker.producer_epoch),
                                 bool(marker.transaction_result), int(marker.coordinator_epoch), _TIMEOUT_MS)
        return ErrorCode.none
    except KafkaApiError as exc:
        return exc.code
    except ReplicationError:
        return ErrorCode.not_enough_replicas
    except TimeoutError:
        return ErrorCode.request_timed_out


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    results = []
    for marker in request.body.markers:
        topics = []
        for topic in marker.topics:
            partitions = [build(nested(cls, "WritableTxnMarkerPartitionResult"), partition_index=index,
                                error_code=await _write(state, marker, topic.name, int(index)))
                          for index in topic.partition_indexes]
            topics.append(build(nested(cls, "WritableTxnMarkerTopicResult"), name=topic.name,
                                partitions=tuple(partitions)))
        results.append(build(nested(cls, "WritableTxnMarkerResult"), producer_id=marker.producer_id,
                             topics=tuple(topics)))
    return build(cls, markers=tuple(results))
