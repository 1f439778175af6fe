"""Validation against the config catalog (broker/config_catalog.py): a topic config's name and value on
CreateTopics/AlterConfigs (`validate_topic_config`), and the broker's own properties at start-up
(`check_broker_properties`): unknown keys (with the nearest known name), values of the wrong type or out of
range, listeners that do not parse or do not match, security settings a cluster cannot start with. Each
error is an InvalidConfig naming the key, the value and what is accepted."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from broker.config import BrokerConfig, ConfigError, Listener, parse_voters
from broker.config_catalog import (
    BROKER_CONFIGS,
    JAAS_SUFFIX,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigType,
    listener_scoped,
)
from broker.security.jaas import plain_users
from broker.security.listeners import (
    all_listeners,
    controller_protocol,
    inter_broker_listener,
    listeners,
    parse_listeners,
    protocol_map,
)


class InvalidConfig(ConfigError):
    """A config name or value a topic cannot take; the message names it and the accepted values (the broker's
    one ConfigError hierarchy: handlers answer it with INVALID_CONFIG, the CLI prints it and exits)."""


def validate_topic_config(name: str, value: str | None) -> str | None:
    """The normalized value, or raise InvalidConfig. None (delete / reset to default) is always valid."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise InvalidConfig(f"unknown topic config {name!r}; known: {', '.join(sorted(TOPIC_CONFIGS))}")
    if value is None:
        return None
    return _checked_value(definition, value)


def _checked_value(definition: ConfigDef, value: str) -> str:
    name = definition.name
    value = value.strip()
    kind = definition.kind
    if kind is ConfigType.BOOLEAN:
        if value.lower() not in ("true", "false"):
            raise InvalidConfig(f"{name}={value!r}: expected true or false")
        return value.lower()
    if kind in (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT, ConfigType.DOUBLE):
        _check_number(definition, value)
        return value
    if kind is ConfigType.LIST:
        items = [item.strip() for item in value.split(",") if item.strip()]
        bad = [item for item in items if definition.choices and item not in definition.choices]
        if bad or (definition.choices and not items):
            raise InvalidConfig(f"{name}={value!r}: each item must be one of {', '.join(sorted(definition.choices))}")
        return ",".join(items)
    if definition.choices and value not in definition.choices:
        raise InvalidConfig(f"{name}={value!r}: expected one of {', '.join(sorted(definition.choices))}")
    return value


def _check_number(definition: ConfigDef, value: str) -> None:
    name = definition.name
    try:
        number = float(value) if definition.kind is ConfigType.DOUBLE else int(value)
    except ValueError:
        expected = "a number" if definition.kind is ConfigType.DOUBLE else "an integer"
        raise InvalidConfig(f"{name}={value!r}: expected {expected}") from None
    bits = {ConfigType.INT: 31, ConfigType.SHORT: 15, ConfigType.LONG: 63}.get(definition.kind)
    if bits is not None and not -(1 << bits) <= number < (1 << bits):
        raise InvalidConfig(f"{name}={value!r} does not fit in a {definition.kind.name.lower()}")
    if definition.minimum is not None and number < definition.minimum:
        raise InvalidConfig(f"{name}={value!r}: must be at least {definition.minimum:g}")
    if definition.maximum is not None and number > definition.maximum:
        raise InvalidConfig(f"{name}={value!r}: must be at most {definition.maximum:g}")


# Keys of features this broker does not have yet: refused, so nobody believes the broker is secured.
_UNSUPPORTED_PREFIXES = {
    "ssl.": "this TLS setting", "sasl.": "this SASL setting",
    "listener.name.": "this per-listener setting (ssl.*, sasl.enabled.mechanisms and plain.sasl.jaas.config are)",
    "security.inter.broker.protocol": "security.inter.broker.protocol (name the listener with"
    " inter.broker.listener.name instead)", "principal.builder.class": "a custom principal builder",
}  # fmt: skip
_SIZE_WITH_UNIT = re.compile(r"^\s*\d+(\.\d+)?\s*([kKmMgGtT]i?[bB]?|[bB])\s*$")


def check_broker_properties(properties: Mapping[str, str]) -> None:
    """Refuse an unknown broker property or a value its type, range or choices do not allow, with one line
    naming the key, the value and what is allowed. Apache Kafka refuses bad values at start-up too
    (ConfigException from ConfigDef.parse; booleans must be true/false) but only warns about unknown
    keys; this broker refuses those as well, suggesting the nearest known key, so a typo never goes unseen."""
    for key, value in properties.items():
        definition = BROKER_CONFIGS.get(key) or listener_scoped(key)
        if definition is None:
            raise ConfigError(_unknown_key_message(key))
        try:
            _checked_value(definition, value)
            check = _SPECIAL_CHECKS.get(key) or (plain_users if key.endswith(JAAS_SUFFIX) else None)
            if check is not None and value.strip():
                check(value)
        except InvalidConfig as exc:
            hint = ""
            if key.endswith(".bytes") and _SIZE_WITH_UNIT.match(value):
                hint = " (sizes are plain byte counts: 1GB is 1073741824)"
            raise ConfigError(f"broker property {exc}{hint}") from None
        except ConfigError as exc:
            shown = "(hidden)" if definition.kind is ConfigType.PASSWORD else repr(value)  # never echo secrets
            raise ConfigError(f"broker property {key}={shown}: {exc}") from None
    check_listener_names(properties)


def _unknown_key_message(key: str) -> str:
    for prefix, feature in _UNSUPPORTED_PREFIXES.items():
        if key.startswith(prefix):
            return (f"broker property {key}: {feature} is not supported by this broker; remove it"
                    " (docs/broker.md lists the supported security properties)")
    if key in TOPIC_CONFIGS:
        broker_names = [prop for prop, _ in TOPIC_CONFIGS[key].synonyms]
        where = f"; the broker-wide default is {broker_names[0]}" if broker_names else ""
        return (f"{key} is a topic config, not a broker property{where}; set it per topic with"
                " kafka-configs --entity-type topics or CreateTopics")
    close = difflib.get_close_matches(key, BROKER_CONFIGS, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else "; docs/configuration.md lists the broker properties"
    return f"unknown broker property {key!r}{hint}"


def _check_listeners(value: str) -> None:
    # Syntax only: whether each NAME has a protocol is checked by check_listener_names, once every property is known.
    for entry in (item.strip() for item in value.split(",") if item.strip()):
        Listener.parse(entry)


def check_listener_names(properties: Mapping[str, str]) -> None:
    """Every listener name is mapped to a protocol; SASL listeners have a mechanism; a TLS listener has a key
    store; a cluster node's inter-broker and controller listeners are ones it can connect with
    (broker/security/listeners.py, docs/broker.md "Security")."""
    config = BrokerConfig().with_overrides(properties)
    specs = listeners(config)
    if config.get("advertised.listeners"):
        parse_listeners(config.get("advertised.listeners"), protocol_map(config.get("listener.security.protocol.map")))
    inter_broker = inter_broker_listener(config)
    from broker.security.tls import client_context, server_context, setting

    if config.get("controller.quorum.voters"):
        _check_cluster_security(config, inter_broker.name)
    for spec in specs:
        if spec.uses_tls:
            server_context(config, spec.name)
        if spec.uses_sasl and not setting(config, spec.name, "sasl.enabled.mechanisms").strip():
            raise ConfigError(f"listener {spec.name} uses SASL but sasl.enabled.mechanisms is empty")
    if config.get("controller.quorum.voters"):
        if inter_broker.uses_tls:
            client_context(config, inter_broker.name)
        name, protocol = controller_protocol(config)
        if protocol == "SSL":
            client_context(config, name)
            if "controller" in config.get("process.roles"):
                server_context(config, name)


def _check_cluster_security(config: BrokerConfig, inter_broker: str) -> None:
    """What a cluster node cannot do yet, refused with the reason: brokers authenticate each other by mutual TLS
    only (the replica fetcher and the controller quorum speak no SASL). Client listeners may use SASL, and an
    authorizer may be set: SCRAM credentials and ACLs live in the cluster metadata."""
    for spec in listeners(config):
        if spec.uses_sasl and spec.name == inter_broker:
            raise ConfigError(f"inter.broker.listener.name={spec.name} is {spec.protocol}: brokers fetch from each"
                              " other over PLAINTEXT or SSL only (use SSL with ssl.client.auth=required to"
                              " authenticate brokers by certificate, and SASL on the client listeners)")
    name, protocol = controller_protocol(config)
    if protocol not in ("PLAINTEXT", "SSL"):
        raise ConfigError(f"controller listener {name} is {protocol}: the controller quorum speaks PLAINTEXT or SSL"
                          " (mutual TLS with ssl.client.auth=required authenticates its members)")
    voters = parse_voters(config.get("controller.quorum.voters"))
    for spec in all_listeners(config):
        if spec.name == name and voters.get(config.node_id) != (spec.host, spec.port):
            raise ConfigError(f"listener {spec.name}://{spec.host}:{spec.port} is the controller listener but"
                              f" controller.quorum.voters gives node {config.node_id}"
                              f" {voters.get(config.node_id)}; make them the same address")


_SPECIAL_CHECKS: Mapping[str, Callable[[str], object]] = MappingProxyType({
    "listeners": _check_listeners,
    "advertised.listeners": _check_listeners,
    "listener.security.protocol.map": protocol_map,
    "controller.quorum.voters": parse_voters,
})  # fmt: skip
