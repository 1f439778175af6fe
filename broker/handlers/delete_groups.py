"""DeleteGroups (42): remove empty groups and their committed offsets."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _delete(state: BrokerState, group_id: str) -> ErrorCode:
    if state.groups.lookup(group_id) is None and group_id not in state.offsets.groups():
        return ErrorCode.group_id_not_found
    try:
        state.groups.delete(group_id)
    except KafkaApiError as exc:
        return exc.code
    state.offsets.delete_group(group_id)
    return ErrorCode.none


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    results = tuple(
        build(nested(cls, "DeletableGroupResult"), group_id=g, error_code=_delete(state, g))
        for g in request.body.groups_names
    )
    return build(cls, throttle_time=NO_THROTTLE, results=results)
