"""DescribeTransactions (65): no transaction ever exists here, so every id is TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class

_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    states = tuple(
        build(nested(cls, "TransactionState"), error_code=ErrorCode.transactional_id_not_found,
              transactional_id=txn_id, transaction_state="", transaction_timeout=datetime.timedelta(0),
              transaction_start_time=_EPOCH, producer_id=-1, producer_epoch=-1, topics=())
        for txn_id in request.body.transactional_ids
    )
    return build(cls, throttle_time=NO_THROTTLE, transaction_states=states)
