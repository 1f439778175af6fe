"""CreateTopics (19): validate names, partitions, replication factor and configs; create."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.config_catalog import TOPIC_CONFIGS, topic_entry
from broker.config_checks import InvalidConfig, validate_topic_config
from broker.handlers._build import NO_THROTTLE, build, has_field, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.topics import validate_name


def _configs(state: BrokerState, cls: Any, configs: dict[str, str]) -> tuple[Any, ...]:
    """Every topic config with its effective value (v5+; Java's admin needs the list, even when empty)."""
    if not has_field(nested(cls, "CreatableTopicResult"), "configs"):
        return ()  # before v5
    config_cls = nested(cls, "CreatableTopicConfigs")
    entries = (topic_entry(state.config, configs, name) for name in TOPIC_CONFIGS)
    return tuple(build(config_cls, name=e.definition.name, value=e.value, read_only=e.read_only,
                       config_source=int(e.source), is_sensitive=False) for e in entries)


def _validate(state: BrokerState, wanted: Any) -> tuple[int, dict[str, str]]:
    """(partition count, topic config overrides) of a valid request."""
    validate_name(wanted.name)
    if state.topics.get(wanted.name) is not None:
        raise KafkaApiError(ErrorCode.topic_already_exists, f"topic {wanted.name!r} already exists")
    state.role.check_replication_factor(wanted.replication_factor)
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
    return partitions, configs


async def _create_topic(state: BrokerState, wanted: Any, partitions: int, configs: dict[str, str]) -> Any:
    """(topic id, replication factor) once this broker has the topic (in a cluster the controller places it)."""
    assignment = [list(a.broker_ids) for a in sorted(wanted.assignments, key=lambda a: a.partition_index)]
    return await state.role.create_topic(wanted.name, partitions, wanted.replication_factor, configs,
                                         assignment or None)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    result_cls = nested(cls, "CreatableTopicResult")
    results = []
    for wanted in request.body.topics:
        replication, topic_id = 1, None
        try:
            partitions, overrides = _validate(state, wanted)
            if not request.body.validate_only:
                topic_id, replication = await _create_topic(state, wanted, partitions, overrides)
            code, message, configs = ErrorCode.none, None, _configs(state, cls, overrides)
        except KafkaApiError as exc:
            code, message, partitions, topic_id, configs = exc.code, str(exc), -1, None, ()
        results.append(
            build(result_cls, name=wanted.name, topic_id=topic_id, error_code=code, error_message=message,
                  topic_config_error_code=0, num_partitions=partitions,
                  replication_factor=replication if partitions > 0 else -1, configs=configs)
        )
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(results))
