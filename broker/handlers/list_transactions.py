"""ListTransactions (66): always empty; transactions are not supported yet."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class

_STATES = frozenset({"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                     "Dead", "PrepareEpochFence"})


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    unknown = tuple(s for s in request.body.state_filters if s not in _STATES)
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, unknown_state_filters=unknown,
                 transaction_states=())
