"""ListTransactions (66): the transactional ids this broker coordinates (`kafka-transactions list`),
filtered by state names, producer ids and (v1) a minimum running time in ms."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.transactions_codec import TxnStatus
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class

_STATES = {status.display: status for status in TxnStatus}


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    unknown = tuple(s for s in body.state_filters if s not in _STATES)
    wanted = {_STATES[s] for s in body.state_filters if s in _STATES}
    producers = {int(p) for p in body.producer_id_filters}
    min_duration = int(getattr(body, "duration_filter", -1))
    now = int(time.time() * 1000)
    found = []
    for transactional_id, value in state.transactions.all():
        if not state.transactions.effects.coordinates(transactional_id):
            continue
        if (wanted and value.status not in wanted) or (producers and value.producer_id not in producers):
            continue
        if min_duration >= 0 and (value.start_ms < 0 or now - value.start_ms < min_duration):
            continue
        found.append(build(nested(cls, "TransactionState"), transactional_id=transactional_id,
                           producer_id=value.producer_id, transaction_state=value.status.display))
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, unknown_state_filters=unknown,
                 transaction_states=tuple(found))
