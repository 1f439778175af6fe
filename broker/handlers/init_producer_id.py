"""InitProducerId (22): a producer id for an idempotent producer, or for a transactional id from its
coordinator (epoch bumped, zombies fenced, the previous instance's open transaction aborted)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers._transactions import check_coordinator, fenced_code
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

_FENCED_SINCE = 4  # InitProducerId v4 introduced PRODUCER_FENCED (KIP-588)


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    try:
        if body.transactional_id is None:
            producer_id, epoch = await state.role.next_producer_id()
        else:
            check_coordinator(state, body.transactional_id)
            timeout_ms = int(body.transaction_timeout.total_seconds() * 1000)
            producer_id, epoch = await state.transactions.init_producer_id(
                body.transactional_id, timeout_ms, int(getattr(body, "producer_id", -1)),
                int(getattr(body, "producer_epoch", -1)))
        code = ErrorCode.none
    except KafkaApiError as exc:
        producer_id, epoch, code = -1, -1, fenced_code(exc, version, _FENCED_SINCE)
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=producer_id, producer_epoch=epoch)
