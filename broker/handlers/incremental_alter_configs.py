"""IncrementalAlterConfigs (44): SET, DELETE, APPEND and SUBTRACT single topic configs."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.config_catalog import TOPIC_CONFIGS, ConfigType, topic_entry
from broker.handlers._configs import alter
from broker.handlers.context import BrokerState, Request
from broker.protocol.errors import KafkaApiError
from broker.topics import Topic

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _list_change(state: BrokerState, topic: Topic, config: Any) -> str:
    definition = TOPIC_CONFIGS.get(config.name)
    if definition is None or definition.kind is not ConfigType.LIST:
        raise KafkaApiError(ErrorCode.invalid_config, f"APPEND/SUBTRACT need a list config; {config.name!r} is not one")
    current = topic_entry(state.config, topic.configs, config.name).value or ""
    items = [i for i in current.split(",") if i]
    change = [i.strip() for i in (config.value or "").split(",") if i.strip()]
    if config.config_operation == APPEND:
        items += [i for i in change if i not in items]
    else:
        items = [i for i in items if i not in change]
    return ",".join(items)


def _new_configs(state: BrokerState, topic: Topic, resource: Any) -> dict[str, str | None]:
    configs: dict[str, str | None] = dict(topic.configs)
    for config in resource.configs:
        if config.config_operation == SET:
            configs[config.name] = config.value
        elif config.config_operation == DELETE:
            configs[config.name] = None
        elif config.config_operation in (APPEND, SUBTRACT):
            configs[config.name] = _list_change(state, topic, config)
        else:
            raise KafkaApiError(ErrorCode.invalid_request,
                                f"config operation {config.config_operation} is not SET, DELETE, APPEND or SUBTRACT")
    return configs


async def handle(state: BrokerState, request: Request) -> Any:
    return await alter(state, request, _new_configs)
