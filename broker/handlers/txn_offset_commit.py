"""TxnOffsetCommit (28): a transactional producer's consumer offsets, sent to the group coordinator.

They are written to the group's `__consumer_offsets` partition as a transactional batch under the
producer's id and epoch and count as committed only when the transaction's COMMIT marker reaches that
partition (an ABORT drops them), as in Kafka. A producer epoch older than one already seen in the
partition is fenced.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_topics import OFFSETS
from broker.coordinator.offsets import CommittedOffset, OffsetChange
from broker.handlers._build import NO_THROTTLE, build, partition_errors
from broker.handlers._offset_store_errors import STORE_ERRORS, store_error_code
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.offsets")

_FENCED_SINCE = 3  # TxnOffsetCommit v3 (KIP-447) knows PRODUCER_FENCED... older clients get INVALID_PRODUCER_EPOCH
_TIMEOUT_MS = 5000


def _check_epoch(state: BrokerState, group: str, producer_id: int, epoch: int) -> None:
    topic = state.internal_topic(OFFSETS)
    plog = state.partitions.log(topic, OFFSETS.partition(group, topic.partitions))
    seen = plog.producers.entries.get(producer_id)
    if seen is not None and seen.epoch > epoch:
        raise KafkaApiError(ErrorCode.producer_fenced,
                            f"producer {producer_id} epoch {epoch} is older than epoch {seen.epoch}: fenced")


async def _commit(state: BrokerState, body: Any) -> ErrorCode:
    try:
        state.check_coordinator(body.group_id)
        _check_epoch(state, body.group_id, int(body.producer_id), int(body.producer_epoch))
    except KafkaApiError as exc:
        return exc.code
    changes = [OffsetChange(t.name, int(p.partition_index),
                            CommittedOffset.committed(int(p.committed_offset),
                                                      int(getattr(p, "committed_leader_epoch", -1)),
                                                      p.committed_metadata))
               for t in body.topics for p in t.partitions]
    try:
        await state.write_txn_offsets(body.group_id, int(body.producer_id), int(body.producer_epoch), changes,
                                      _TIMEOUT_MS)
    except STORE_ERRORS as exc:
        log.warning("could not store the transactional offsets of group %r: %s", body.group_id, exc)
        return store_error_code(exc)
    return ErrorCode.none


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    code = await _commit(state, body)
    if code == ErrorCode.producer_fenced and version < _FENCED_SINCE:
        code = ErrorCode.invalid_producer_epoch
    topics = tuple(partition_errors(cls, "TxnOffsetCommit", t, lambda *_: code) for t in body.topics)
    return build(cls, throttle_time=NO_THROTTLE, topics=topics)
