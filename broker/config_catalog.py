"""Every topic and broker config the broker knows: Kafka's name, type, default, broker synonyms.

DescribeConfigs answers from here (value, source, synonyms, type, documentation), Create/Alter
validate topic configs against it and `check_broker_properties` validates the broker's own properties
at start-up. Topic configs follow Apache Kafka 4's list; `applied=False` marks the ones a
single-node broker stores and reports but does not act on (replication throttles, tiered storage,
compression levels, ...), and their documentation says so.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from types import MappingProxyType

from broker.config import DEFAULTS, BrokerConfig, ConfigError, Listener, parse_voters
from broker.security.jaas import plain_users
from broker.security.listeners import (
    all_listeners,
    controller_protocol,
    inter_broker_listener,
    listeners,
    parse_listeners,
    protocol_map,
)

_LONG_MAX = str((1 << 63) - 1)


class ConfigType(IntEnum):  # DescribeConfigs v3+ config_type
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):  # DescribeConfigs config_source / synonym source
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    kind: ConfigType
    default: str | None
    doc: str
    synonyms: tuple[tuple[str, int], ...] = ()  # broker properties giving the default, and a unit multiplier
    choices: frozenset[str] = frozenset()
    minimum: float | None = None
    maximum: float | None = None
    applied: bool = True


def _topic(name: str, kind: ConfigType, default: str | None, doc: str, *synonyms: str | tuple[str, int],
           choices: tuple[str, ...] = (), minimum: float | None = None, maximum: float | None = None,
           applied: bool = True) -> ConfigDef:
    pairs = tuple((s, 1) if isinstance(s, str) else s for s in synonyms)
    if not applied:
        doc += " Stored and reported; this single-node broker does not act on it."
    return ConfigDef(name, kind, default, doc, pairs, frozenset(choices), minimum, maximum, applied)


_B, _S, _I, _L, _D, _LI = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                          ConfigType.DOUBLE, ConfigType.LIST)
_TOPIC_LIST = (
    _topic("cleanup.policy", _LI, "delete", "delete (retention) and/or compact.", "log.cleanup.policy",
           choices=("delete", "compact")),
    _topic("compression.type", _S, "producer", "Batches are kept as the producer compressed them.",
           "compression.type", choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
           applied=False),
    _topic("compression.gzip.level", _I, "-1", "gzip level for broker-side compression.", "compression.gzip.level",
           applied=False),
    _topic("compression.lz4.level", _I, "9", "lz4 level for broker-side compression.", "compression.lz4.level",
           applied=False),
    _topic("compression.zstd.level", _I, "3", "zstd level for broker-side compression.", "compression.zstd.level",
           applied=False),
    _topic("delete.retention.ms", _L, "86400000", "How long compaction keeps tombstones.",
           "log.cleaner.delete.retention.ms", minimum=0),
    _topic("file.delete.delay.ms", _L, "60000", "Delay before deleting a file from the filesystem.",
           "log.segment.delete.delay.ms", minimum=0, applied=False),
    _topic("flush.messages", _L, _LONG_MAX, "fsync after this many messages.", "log.flush.interval.messages",
           minimum=1),
    _topic("flush.ms", _L, _LONG_MAX, "fsync after this many milliseconds.", "log.flush.interval.ms", minimum=0),
    _topic("follower.replication.throttled.replicas", _LI, "", "Replicas throttled on the follower side.",
           "follower.replication.throttled.replicas", applied=False),
    _topic("index.interval.bytes", _I, "4096", "Bytes of log between offset index entries.",
           "log.index.interval.bytes", minimum=0, applied=False),
    _topic("leader.replication.throttled.replicas", _LI, "", "Replicas throttled on the leader side.",
           "leader.replication.throttled.replicas", applied=False),
    _topic("local.retention.bytes", _L, "-2", "Local retention with tiered storage.", "log.local.retention.bytes",
           minimum=-2, applied=False),
    _topic("local.retention.ms", _L, "-2", "Local retention with tiered storage.", "log.local.retention.ms",
           minimum=-2, applied=False),
    _topic("max.compaction.lag.ms", _L, _LONG_MAX, "Longest time a record stays uncompacted.",
           "log.cleaner.max.compaction.lag.ms", minimum=1, applied=False),
    _topic("max.message.bytes", _I, "1048588", "Largest record batch the topic accepts (MESSAGE_TOO_LARGE above).",
           "message.max.bytes", minimum=0),
    _topic("message.timestamp.after.max.ms", _L, "3600000", "Largest allowed gap of a timestamp into the future.",
           "log.message.timestamp.after.max.ms", minimum=0, applied=False),
    _topic("message.timestamp.before.max.ms", _L, _LONG_MAX, "Largest allowed age of a record timestamp.",
           "log.message.timestamp.before.max.ms", minimum=0, applied=False),
    _topic("message.timestamp.type", _S, "CreateTime", "CreateTime (producer's) or LogAppendTime (broker's).",
           "log.message.timestamp.type", choices=("CreateTime", "LogAppendTime")),
    _topic("min.cleanable.dirty.ratio", _D, "0.5", "Dirty ratio that triggers compaction.",
           "log.cleaner.min.cleanable.ratio", minimum=0, maximum=1, applied=False),
    _topic("min.compaction.lag.ms", _L, "0", "Shortest time a record stays uncompacted.",
           "log.cleaner.min.compaction.lag.ms", minimum=0, applied=False),
    _topic("min.insync.replicas", _I, "1", "acks=all needs this many in-sync replicas (NOT_ENOUGH_REPLICAS).",
           "min.insync.replicas", minimum=1),
    _topic("preallocate", _B, "false", "Preallocate segment files.", "log.preallocate", applied=False),
    _topic("remote.log.copy.disable", _B, "false", "Tiered storage: stop copying segments to remote storage.",
           applied=False),
    _topic("remote.log.delete.on.disable", _B, "false", "Tiered storage: delete remote data when it is disabled.",
           applied=False),
    _topic("remote.storage.enable", _B, "false", "Tiered storage.", applied=False),
    _topic("retention.bytes", _L, "-1", "Size limit per partition before old segments are deleted (-1: none).",
           "log.retention.bytes"),
    _topic("retention.ms", _L, "604800000", "Age after which segments are deleted (-1: never).",
           "log.retention.ms", ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000), minimum=-1),
    _topic("segment.bytes", _I, "1073741824", "Segment file size before rolling.", "log.segment.bytes", minimum=14),
    _topic("segment.index.bytes", _I, "10485760", "Size of the offset index of a segment.",
           "log.index.size.max.bytes", minimum=4, applied=False),
    _topic("segment.jitter.ms", _L, "0", "Random jitter subtracted from segment.ms.", "log.roll.jitter.ms",
           minimum=0, applied=False),
    _topic("segment.ms", _L, "604800000", "Age after which a segment is rolled.", "log.roll.ms",
           ("log.roll.hours", 3_600_000), minimum=1),
    _topic("unclean.leader.election.enable", _B, "false", "Allow out-of-sync replicas to become leader.",
           "unclean.leader.election.enable", applied=False),
)
TOPIC_CONFIGS: Mapping[str, ConfigDef] = MappingProxyType({c.name: c for c in _TOPIC_LIST})

# Broker properties that only exist as topic-default synonyms (not in broker.config.DEFAULTS).
_SYNONYM_DEFAULTS = {
    "log.retention.hours": "168", "log.roll.hours": "168", "log.cleanup.policy": "delete",
    "compression.type": "producer",
}  # fmt: skip


def _broker(name: str, kind: ConfigType, doc: str, *, choices: tuple[str, ...] = (), minimum: float | None = None,
            maximum: float | None = None) -> ConfigDef:
    return ConfigDef(name, kind, DEFAULTS[name], doc, (), frozenset(choices), minimum, maximum)


_SH, _P = ConfigType.SHORT, ConfigType.PASSWORD
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Broker properties that are not topic-config synonyms, typed as Apache Kafka 4 types them
# (KafkaConfig / ServerConfigs / SocketServerConfigs); the default is DEFAULTS' value.
_BROKER_LIST = (
    _broker("node.id", _I, "This node's id.", minimum=0),
    _broker("listeners", _S, "NAME://HOST:PORT listeners, comma-separated; NAME is PLAINTEXT, SSL, SASL_PLAINTEXT,"
            " SASL_SSL or a name mapped in listener.security.protocol.map."),
    _broker("advertised.listeners", _S, "NAME://HOST:PORT per listener given to clients (default: listeners)."),
    _broker("listener.security.protocol.map", _S, "LISTENER:PROTOCOL pairs naming each listener's security"
            " protocol."),
    _broker("log.dirs", _S, "The data directory (one; --data-dir)."),
    _broker("auto.create.topics.enable", _B, "Create a topic on Metadata/Produce for an unknown name."),
    _broker("num.partitions", _I, "Partitions of an auto-created topic.", minimum=1),
    _broker("default.replication.factor", _I, "Replication factor of an auto-created topic.", minimum=1),
    _broker("socket.request.max.bytes", _I, "Largest request; a larger one closes the connection.", minimum=1),
    _broker("queued.max.request.bytes", _L, "Bytes held by requests being read and handled before the broker"
            " stops reading sockets (-1: no limit)."),
    _broker("group.initial.rebalance.delay.ms", _I, "Wait for more members before the first rebalance.", minimum=0),
    _broker("group.min.session.timeout.ms", _I, "Smallest session timeout a group member may ask for.", minimum=0),
    _broker("group.max.session.timeout.ms", _I, "Largest session timeout a group member may ask for.", minimum=0),
    _broker("offsets.topic.num.partitions", _I, "Partitions of __consumer_offsets.", minimum=1),
    _broker("offsets.topic.replication.factor", _SH, "Replication factor of __consumer_offsets.", minimum=1),
    _broker("transaction.state.log.num.partitions", _I, "Partitions of __transaction_state.", minimum=1),
    _broker("transaction.state.log.replication.factor", _SH, "Replication factor of __transaction_state.",
            minimum=1),
    _broker("transaction.max.timeout.ms", _I, "Largest transaction.timeout.ms a producer may ask for.", minimum=1),
    _broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", _I,
            "How often transactions past their timeout are aborted.", minimum=1),
    _broker("log.retention.check.interval.ms", _L, "How often retention and compaction run.", minimum=1),
    _broker("cluster.id", _S, "The cluster id reported to clients."),
    _broker("metrics.port", _I, "Port of the Prometheus /metrics endpoint on the listener's host (-1: none).",
            minimum=-1, maximum=65535),
    _broker("controller.quorum.voters", _S, "ID@HOST:PORT of every controller voter; set: a cluster node."),
    _broker("process.roles", _LI, "broker, or broker,controller for a voter.", choices=("broker", "controller")),
    _broker("broker.rack", _S, "Rack of this node, for replica placement."),
    _broker("broker.session.timeout.ms", _I, "A broker without heartbeats this long is fenced.", minimum=1),
    _broker("broker.heartbeat.interval.ms", _I, "Interval of broker heartbeats to the controller.", minimum=1),
    _broker("replica.lag.time.max.ms", _L, "A follower this far behind leaves the ISR.", minimum=1),
    _broker("metadata.log.max.record.bytes.between.snapshots", _L,
            "Bytes of metadata records applied before a controller snapshots its log.", minimum=1),
    # Security (broker/security/, docs/broker.md "Security"); any may also be set per listener as
    # listener.name.<listener>.<property> (see _LISTENER_SCOPED).
    _broker("ssl.keystore.type", _S, "Key store format: PEM (convert JKS/PKCS12 with keytool/openssl).",
            choices=("PEM",)),
    _broker("ssl.keystore.location", _S, "PEM file with this broker's certificate chain and private key."),
    _broker("ssl.keystore.certificate.chain", _P, "The certificate chain as PEM text (instead of a file)."),
    _broker("ssl.keystore.key", _P, "The private key as PEM text (instead of a file)."),
    _broker("ssl.keystore.password", _P, "Accepted for Kafka compatibility; PEM key stores have no store password."),
    _broker("ssl.key.password", _P, "Password of an encrypted private key."),
    _broker("ssl.truststore.type", _S, "Trust store format: PEM.", choices=("PEM",)),
    _broker("ssl.truststore.location", _S, "PEM file with the CA certificates client certificates must chain to."),
    _broker("ssl.truststore.certificates", _P, "The trusted CA certificates as PEM text (instead of a file)."),
    _broker("ssl.truststore.password", _P, "Accepted for Kafka compatibility; PEM trust stores have no password."),
    _broker("ssl.client.auth", _S, "Ask TLS clients for a certificate: required, requested or none.",
            choices=("required", "requested", "none")),
    _broker("ssl.enabled.protocols", _LI, "TLS versions accepted.", choices=("TLSv1.2", "TLSv1.3")),
    _broker("ssl.endpoint.identification.algorithm", _S, "https: a broker connecting to another over TLS checks"
            " that the certificate names the host it connects to; empty: it does not.", choices=("https", "")),
    _broker("inter.broker.listener.name", _S, "The listener other brokers connect to (default: the first one)."),
    _broker("controller.listener.names", _S, "The controller quorum's listener name; its entry in"
            " listener.security.protocol.map (PLAINTEXT or SSL) secures the quorum."),
    _broker("sasl.enabled.mechanisms", _LI, "SASL mechanisms SASL listeners accept.",
            choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")),
    _broker("super.users", _S, "Principals every ACL check allows, separated by ';' (User:admin;User:ops)."),
    _broker("authorizer.class.name", _S, "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns on ACL"
            " checks; empty: every request is allowed.", choices=("", STANDARD_AUTHORIZER)),
    _broker("allow.everyone.if.no.acl.found", _B, "Allow access to a resource no ACL matches (Kafka: false)."),
)
# Properties that may also be set for one listener as listener.name.<listener>.<property>.
_LISTENER_SCOPED = frozenset(
    name for name in (d.name for d in _BROKER_LIST) if name.startswith("ssl.") or name == "sasl.enabled.mechanisms"
)
# listener.name.<listener>.plain.sasl.jaas.config: the PLAIN users (user_NAME="password" options).
_JAAS_SUFFIX = ".plain.sasl.jaas.config"
_SCRAM_JAAS = frozenset({"scram-sha-256.sasl.jaas.config", "scram-sha-512.sasl.jaas.config"})


def _synonym_definitions() -> dict[str, ConfigDef]:
    """The broker properties that give a topic config its default (log.retention.hours, ...)."""
    out: dict[str, ConfigDef] = {}
    for topic_def in _TOPIC_LIST:
        for position, (prop, multiplier) in enumerate(topic_def.synonyms):
            if prop in out:
                continue
            default = DEFAULTS.get(prop, _SYNONYM_DEFAULTS.get(prop, topic_def.default if position == 0 else None))
            if multiplier == 1:
                out[prop] = ConfigDef(prop, topic_def.kind, default, topic_def.doc, (), topic_def.choices,
                                      topic_def.minimum, topic_def.maximum, topic_def.applied)
            else:  # hours/minutes of a millisecond topic config: Kafka types them INT
                minimum = 1 if topic_def.minimum is not None and topic_def.minimum >= 1 else None
                out[prop] = ConfigDef(prop, ConfigType.INT, default, topic_def.doc, (), minimum=minimum)
    return out


BROKER_CONFIGS: Mapping[str, ConfigDef] = MappingProxyType(
    dict(sorted({**_synonym_definitions(), **{d.name: d for d in _BROKER_LIST}}.items()))
)


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    definition: ConfigDef
    value: str | None
    source: ConfigSource
    synonyms: tuple[Synonym, ...]
    read_only: bool


def topic_entry(broker: BrokerConfig, overrides: Mapping[str, str], name: str) -> ConfigEntry:
    """A topic config's effective value: topic override, else a broker property set explicitly, else Kafka's
    default; synonyms list every level in that order (DescribeConfigs include_synonyms)."""
    definition = TOPIC_CONFIGS[name]
    synonyms: list[Synonym] = []
    if name in overrides:
        synonyms.append(Synonym(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG))
    for prop, multiplier in definition.synonyms:
        if prop in broker.properties and not _is_default(broker, prop):
            value = broker.properties[prop]
            if multiplier != 1 and value.lstrip("-").isdigit():
                value = str(int(value) * multiplier)
            synonyms.append(Synonym(prop, value, ConfigSource.STATIC_BROKER_CONFIG))
    synonyms.append(Synonym(definition.synonyms[0][0] if definition.synonyms else name, definition.default,
                            ConfigSource.DEFAULT_CONFIG))
    first = synonyms[0]
    return ConfigEntry(definition, first.value, first.source, tuple(synonyms), read_only=False)


def _is_default(broker: BrokerConfig, prop: str) -> bool:
    return broker.properties.get(prop) == DEFAULTS.get(prop, _SYNONYM_DEFAULTS.get(prop))


def broker_entries(broker: BrokerConfig) -> list[ConfigEntry]:
    """Every broker property this broker reads or reports, with STATIC_BROKER_CONFIG when it was set
    (config file or --set) and DEFAULT_CONFIG otherwise. All read-only: no dynamic broker configs."""
    entries = []
    for name in sorted({*BROKER_CONFIGS, *broker.properties}):
        definition = BROKER_CONFIGS.get(name) or _listener_scoped(name) or ConfigDef(
            name, ConfigType.STRING, None, "Broker property.")
        secret = definition.kind is ConfigType.PASSWORD  # Kafka never returns these values (is_sensitive)
        synonyms = [Synonym(name, None if secret else definition.default, ConfigSource.DEFAULT_CONFIG)]
        if name in broker.properties and broker.properties[name] != definition.default:
            value = None if secret else broker.properties[name]
            synonyms.insert(0, Synonym(name, value, ConfigSource.STATIC_BROKER_CONFIG))
        first = synonyms[0]
        entries.append(ConfigEntry(definition, first.value, first.source, tuple(synonyms), read_only=True))
    return entries


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
        definition = BROKER_CONFIGS.get(key) or _listener_scoped(key)
        if definition is None:
            raise ConfigError(_unknown_key_message(key))
        try:
            _checked_value(definition, value)
            check = _SPECIAL_CHECKS.get(key) or (plain_users if key.endswith(_JAAS_SUFFIX) else None)
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


def _listener_scoped(key: str) -> ConfigDef | None:
    """The definition behind `listener.name.<listener>.<property>`, or None when the key is not one."""
    if not key.startswith("listener.name."):
        return None
    rest = key.removeprefix("listener.name.")
    listener, _, prop = rest.partition(".")
    if not listener or not prop:
        return None
    if prop in _LISTENER_SCOPED:
        return replace(BROKER_CONFIGS[prop], name=key)
    if "." + prop == _JAAS_SUFFIX:
        return ConfigDef(key, ConfigType.PASSWORD, None, "PLAIN users of this listener: user_NAME=\"password\".")
    if prop in _SCRAM_JAAS:
        return ConfigDef(key, ConfigType.PASSWORD, None, "Accepted so Kafka's SCRAM server.properties work unchanged;"
                         " Kafka uses it for its own inter-broker login, which this broker does not make.")
    return None


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
