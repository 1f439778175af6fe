"""InitProducerId (22): producer ids for idempotent producers; transactional ids are refused."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    try:
        if body.transactional_id is not None:
            raise KafkaApiError(
                ErrorCode.transactional_id_authorization_failed,
                "transactions are not supported by this broker yet; use idempotence without transactional.id",
            )
        producer_id, epoch = await state.role.next_producer_id()
        code = ErrorCode.none
    except KafkaApiError as exc:
        producer_id, epoch, code = -1, -1, exc.code
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=producer_id, producer_epoch=epoch)
