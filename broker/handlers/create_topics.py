"""CreateTopics (19): validate names, partitions, replication factor and configs; create."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.config_catalog import InvalidConfig, validate_topic_config
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.topics import validate_name


def _create(state: BrokerState, wanted: Any, validate_only: bool) -> tuple[Any, int]:
    validate_name(wanted.name)
    if state.topics.get(wanted.name) is not None:
        raise KafkaApiError(ErrorCode.topic_already_exists, f"topic {wanted.name!r} already exists")
    if wanted.replication_factor not in (-1, 1):
        raise KafkaApiError(
            ErrorCode.invalid_replication_factor,
            f"replication factor {wanted.replication_factor} is larger than the 1 available broker",
        )
    partitions = wanted.num_partitions if wanted.num_partitions != -1 else state.config.int("num.partitions")
    if wanted.assignments:
        partitions = len(wanted.assignments)
    if partitions < 1:
        raise KafkaApiError(ErrorCode.invalid_partitions, f"partition count {partitions} must be at least 1")
    configs = {}
    for item in wanted.configs:
        try:
            value = validate_topic_config(item.name, item.value)
        except InvalidConfig as exc:
            raise KafkaApiError(ErrorCode.invalid_config, str(exc)) from None
        if value is not None:
            configs[item.name] = value
    if validate_only:
        return None, partitions
    return state.create_topic(wanted.name, partitions, configs), partitions


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    result_cls = nested(cls, "CreatableTopicResult")
    results = []
    for wanted in request.body.topics:
        try:
            topic, partitions = _create(state, wanted, request.body.validate_only)
            code, message = ErrorCode.none, None
            topic_id = topic.topic_id if topic is not None else None
        except KafkaApiError as exc:
            code, message, partitions, topic_id = exc.code, str(exc), -1, None
        results.append(
            build(result_cls, name=wanted.name, topic_id=topic_id, error_code=code, error_message=message,
                  topic_config_error_code=0, num_partitions=partitions, replication_factor=1 if partitions > 0 else -1,
                  configs=None)
        )
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(results))
