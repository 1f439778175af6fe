"""ListGroups (16): every group with members or committed offsets, optionally filtered by state."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.coordinator.group_model import GroupState
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    wanted = {s.lower() for s in getattr(request.body, "states_filter", ())}
    # A group that only stores offsets is Empty with no protocol type, as Kafka lists it (its admin client
    # counts an empty protocol type as a consumer group).
    listing: dict[str, tuple[str, str]] = {g: ("", GroupState.EMPTY.value) for g in state.offsets.groups()}
    for group in state.groups.groups.values():
        listing[group.group_id] = (group.protocol_type or "", group.state.value)
    groups = tuple(
        build(nested(cls, "ListedGroup"), group_id=group_id, protocol_type=kind, group_state=group_state)
        for group_id, (kind, group_state) in sorted(listing.items())
        if not wanted or group_state.lower() in wanted
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=groups)
