"""Config resources shared by DescribeConfigs, AlterConfigs and IncrementalAlterConfigs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from broker.config_checks import InvalidConfig, validate_topic_config
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.topics import Topic

TOPIC, GROUP, BROKER, BROKER_LOGGER = 2, 3, 4, 8


def check_broker_name(state: BrokerState, name: str) -> None:
    """'' means the cluster-wide default; otherwise it must be this broker's node id."""
    if name not in ("", str(state.config.node_id)):
        raise KafkaApiError(
            ErrorCode.invalid_request, f"broker {name!r} is not this broker; its node.id is {state.config.node_id}"
        )


def unsupported_resource(resource_type: int) -> KafkaApiError:
    return KafkaApiError(
        ErrorCode.invalid_request,
        f"config resource type {resource_type} is not supported; use TOPIC (2) or BROKER (4)",
    )


def refuse_broker_change(state: BrokerState, name: str) -> KafkaApiError:
    check_broker_name(state, name)
    return KafkaApiError(
        ErrorCode.invalid_request,
        "broker configs are static here: set them in the config file or with `broker start --set KEY=VALUE`"
        " and restart",
    )


def validated(configs: dict[str, str | None]) -> dict[str, str | None]:
    """Each value normalized, or INVALID_CONFIG naming the config and what it accepts."""
    try:
        return {name: validate_topic_config(name, value) for name, value in configs.items()}
    except InvalidConfig as exc:
        raise KafkaApiError(ErrorCode.invalid_config, str(exc)) from None


def apply_topic_configs(state: BrokerState, topic: Topic, configs: dict[str, str], validate_only: bool) -> None:
    if topic.is_internal:
        raise KafkaApiError(ErrorCode.invalid_request, f"topic {topic.name!r} is internal; its configs are fixed")
    if not validate_only:
        state.alter_topic_configs(topic, configs)


NewConfigs = Callable[[BrokerState, Topic, Any], dict[str, str | None]]


async def alter(state: BrokerState, request: Request, new_configs: NewConfigs) -> Any:
    """AlterConfigs and IncrementalAlterConfigs: the same checks and answers; only how a resource's entries
    turn into the topic's new overrides differs (`new_configs`; None removes an override)."""
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    answers = []
    for resource in body.resources:
        try:
            if resource.resource_type == BROKER:
                raise refuse_broker_change(state, resource.resource_name)
            if resource.resource_type != TOPIC:
                raise unsupported_resource(resource.resource_type)
            topic = state.require_topic(resource.resource_name)
            values = validated(new_configs(state, topic, resource))
            apply_topic_configs(state, topic, {k: v for k, v in values.items() if v is not None}, body.validate_only)
            code, message = ErrorCode.none, None
        except KafkaApiError as exc:
            code, message = exc.code, str(exc)
        answers.append(build(nested(cls, "AlterConfigsResourceResponse"), error_code=code, error_message=message,
                             resource_type=resource.resource_type, resource_name=resource.resource_name))
    return build(cls, throttle_time=NO_THROTTLE, responses=tuple(answers))
