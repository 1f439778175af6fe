"""DescribeConfigs (32): every topic or broker config with its value, source, synonyms, type and doc."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.config_catalog import TOPIC_CONFIGS, ConfigEntry, ConfigType, broker_entries, topic_entry
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._configs import BROKER, TOPIC, check_broker_name, unsupported_resource
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError


def _entries(state: BrokerState, resource: Any) -> list[ConfigEntry]:
    wanted = resource.configuration_keys
    if resource.resource_type == TOPIC:
        topic = state.require_topic(resource.resource_name)
        names = [n for n in TOPIC_CONFIGS if wanted is None or n in wanted]
        return [topic_entry(state.config, topic.configs, name) for name in names]
    if resource.resource_type == BROKER:
        check_broker_name(state, resource.resource_name)
        return [e for e in broker_entries(state.config) if wanted is None or e.definition.name in wanted]
    raise unsupported_resource(resource.resource_type)


def _config(cls: Any, entry: ConfigEntry, synonyms: bool, documentation: bool) -> Any:
    synonym_cls = nested(cls, "DescribeConfigsSynonym")
    return build(
        nested(cls, "DescribeConfigsResourceResult"),
        name=entry.definition.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_sensitive=entry.definition.kind is ConfigType.PASSWORD,
        synonyms=tuple(build(synonym_cls, name=s.name, value=s.value, source=int(s.source)) for s in entry.synonyms)
        if synonyms else (),
        config_type=int(entry.definition.kind),
        documentation=entry.definition.doc if documentation else None,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    synonyms = getattr(body, "include_synonyms", False)
    documentation = getattr(body, "include_documentation", False)
    results = []
    for resource in body.resources:
        try:
            configs = tuple(_config(cls, e, synonyms, documentation) for e in _entries(state, resource))
            code, message = ErrorCode.none, ""  # Kafka 4.3's message without error, in every version
        except KafkaApiError as exc:
            configs, code, message = (), exc.code, str(exc)
        results.append(build(nested(cls, "DescribeConfigsResult"), error_code=code, error_message=message,
                             resource_type=resource.resource_type, resource_name=resource.resource_name,
                             configs=configs))
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(results))
