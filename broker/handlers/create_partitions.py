"""CreatePartitions (37): grow a topic's partition count (never shrink).

A single node adds the logs itself; a cluster member forwards the request to the active controller, which
validates it, places the new replicas and commits them to the metadata log, and answers once it has applied
them (every broker then creates the logs of the replicas it holds and leads or follows them)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._controller import controller_errors
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


async def _grow(state: BrokerState, wanted: Any, validate_only: bool) -> None:
    topic = state.require_topic(wanted.name)
    if topic.is_internal:
        raise KafkaApiError(ErrorCode.invalid_request,
                            f"topic {topic.name!r} is internal; its partition count decides where groups live")
    if state.cluster is not None:  # the controller checks against the cluster's metadata, not this copy
        await _grow_in_cluster(state, wanted, validate_only)
        return
    if wanted.count <= topic.partitions:
        raise KafkaApiError(
            ErrorCode.invalid_partitions,
            f"topic {topic.name!r} has {topic.partitions} partitions; the new count {wanted.count} must be higher",
        )
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


async def _grow_in_cluster(state: BrokerState, wanted: Any, validate_only: bool) -> None:
    assert state.cluster is not None
    assignment = None if wanted.assignments is None else [list(a.broker_ids) for a in wanted.assignments]
    with controller_errors():
        await state.cluster.topic_admin.create_partitions(wanted.name, wanted.count, assignment, validate_only)
    info = state.cluster.meta.topics.get(wanted.name)
    if not validate_only and (info is None or len(info.partitions) != wanted.count):
        # Accepted, but another change to the topic was applied first and this one was dropped.
        raise KafkaApiError(ErrorCode.invalid_partitions,
                            f"topic {wanted.name!r} changed while adding partitions; describe it and retry")


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    results = []
    for wanted in body.topics:
        try:
            await _grow(state, wanted, body.validate_only)
            code, message = ErrorCode.none, None
        except KafkaApiError as exc:
            code, message = exc.code, str(exc)
        results.append(build(nested(cls, "CreatePartitionsTopicResult"), name=wanted.name, error_code=code,
                             error_message=message))
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(results))
