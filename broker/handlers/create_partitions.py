"""CreatePartitions (37): grow a topic's partition count (never shrink)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _grow(state: BrokerState, wanted: Any, validate_only: bool) -> None:
    topic = state.require_topic(wanted.name)
    if topic.is_internal:
        raise KafkaApiError(ErrorCode.invalid_request,
                            f"topic {topic.name!r} is internal; its partition count decides where groups live")
    if wanted.count <= topic.partitions:
        raise KafkaApiError(
            ErrorCode.invalid_partitions,
            f"topic {topic.name!r} has {topic.partitions} partitions; the new count {wanted.count} must be higher",
        )
    if state.cluster is not None:
        raise KafkaApiError(ErrorCode.invalid_request, "adding partitions to a topic of a broker cluster is not"
                            " supported yet; create a new topic with more partitions")
    if wanted.assignments is not None:
        if len(wanted.assignments) != wanted.count - topic.partitions:
            raise KafkaApiError(
                ErrorCode.invalid_replica_assignment,
                f"{len(wanted.assignments)} assignments for {wanted.count - topic.partitions} new partitions",
            )
        node = state.config.node_id
        if any(tuple(a.broker_ids) != (node,) for a in wanted.assignments):
            raise KafkaApiError(ErrorCode.invalid_replica_assignment,
                                f"this single-node broker can only place replicas on broker {node}")
    if not validate_only:
        state.add_partitions(topic, wanted.count)


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    results = []
    for wanted in body.topics:
        try:
            _grow(state, wanted, body.validate_only)
            code, message = ErrorCode.none, None
        except KafkaApiError as exc:
            code, message = exc.code, str(exc)
        results.append(build(nested(cls, "CreatePartitionsTopicResult"), name=wanted.name, error_code=code,
                             error_message=message))
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(results))
