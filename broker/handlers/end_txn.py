"""EndTxn (26): refused, see _transactions."""

from __future__ import annotations

from typing import Any

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers._transactions import refuse
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, error_code=refuse(request, request.body.transactional_id),
                 producer_id=-1, producer_epoch=-1)
