"""AddOffsetsToTxn (25): the group's `__consumer_offsets` partition joins the transaction, so that the
offsets the producer then sends with TxnOffsetCommit commit or abort with it (consume-transform-produce)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_topics import OFFSETS
from broker.handlers._build import NO_THROTTLE, build
from broker.handlers._transactions import check_coordinator, fenced_code
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

_FENCED_SINCE = 2


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    try:
        check_coordinator(state, body.transactional_id)
        topic = state.internal_topic(OFFSETS)
        tp = (OFFSETS.name, OFFSETS.partition(body.group_id, topic.partitions))
        await state.transactions.add_partitions(body.transactional_id, int(body.producer_id), int(body.producer_epoch),
                                                [tp])
        code = ErrorCode.none
    except KafkaApiError as exc:
        code = fenced_code(exc, version, _FENCED_SINCE)
    return build(cls, throttle_time=NO_THROTTLE, error_code=code)
