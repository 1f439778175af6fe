"""DescribeCluster (60): the cluster id, the live brokers and the active controller."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import _placement
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class

BROKERS_ENDPOINT = 1
_NO_OPERATIONS = -2147483648


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    endpoint_type = getattr(request.body, "endpoint_type", BROKERS_ENDPOINT)
    brokers: tuple[Any, ...] = tuple(
        build(nested(cls, "DescribeClusterBroker"), broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in _placement.brokers(state)
    )
    code, message = ErrorCode.none, None
    if endpoint_type != BROKERS_ENDPOINT:
        # As a Kafka broker answers: controller endpoints are only described by controllers.
        brokers, code = (), ErrorCode.unsupported_endpoint_type
        message = f"endpoint type {endpoint_type} is not served; ask for brokers (1)"
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message,
                 endpoint_type=endpoint_type, cluster_id=state.config.get("cluster.id"),
                 controller_id=_placement.controller_id(state),
                 brokers=brokers, cluster_authorized_operations=_NO_OPERATIONS)
