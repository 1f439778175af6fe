"""ListPartitionReassignments (46): the partitions whose replicas are being moved. This broker never moves
replicas (AlterPartitionReassignments is not served), so none is: Kafka's answer for a cluster at rest, whatever
topics (known or not) are asked (ReplicationControlManager.listReassignments skips unknown ones)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=())
