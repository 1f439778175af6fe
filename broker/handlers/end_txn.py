"""EndTxn (26): commit or abort the producer's transaction; answered once the decision is durable in
`__transaction_state` (the markers follow; see broker/coordinator/transactions.py)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

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
        await state.transactions.end_transaction(body.transactional_id, int(body.producer_id),
                                                 int(body.producer_epoch), bool(body.committed))
        code = ErrorCode.none
    except KafkaApiError as exc:
        code = fenced_code(exc, version, _FENCED_SINCE)
    # v5 (transaction version 2) answers the producer's next id and epoch; version 1 keeps them as they were.
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=body.producer_id,
                 producer_epoch=body.producer_epoch)
