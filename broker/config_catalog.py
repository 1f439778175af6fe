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
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

from broker.config import DEFAULTS, BrokerConfig, ConfigError, Listener, parse_voters

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


_SH = ConfigType.SHORT
# Broker properties that are not topic-config synonyms, typed as Apache Kafka 4 types them
# (KafkaConfig / ServerConfigs / SocketServerConfigs); the default is DEFAULTS' value.
_BROKER_LIST = (
    _broker("node.id", _I, "This node's id.", minimum=0),
    _broker("listeners", _S, "The one PLAINTEXT://HOST:PORT listener clients connect to."),
    _broker("advertised.listeners", _S, "The PLAINTEXT://HOST:PORT given to clients (default: listeners)."),
    _broker("listener.security.protocol.map", _S, "LISTENER:PROTOCOL pairs; only PLAINTEXT is supported yet."),
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
    _broker("log.retention.check.interval.ms", _L, "How often retention and compaction run.", minimum=1),
    _broker("cluster.id", _S, "The cluster id reported to clients."),
    _broker("controller.quorum.voters", _S, "ID@HOST:PORT of every controller voter; set: a cluster node."),
    _broker("process.roles", _LI, "broker, or broker,controller for a voter.", choices=("broker", "controller")),
    _broker("broker.rack", _S, "Rack of this node, for replica placement."),
    _broker("broker.session.timeout.ms", _I, "A broker without heartbeats this long is fenced.", minimum=1),
    _broker("broker.heartbeat.interval.ms", _I, "Interval of broker heartbeats to the controller.", minimum=1),
    _broker("replica.lag.time.max.ms", _L, "A follower this far behind leaves the ISR.", minimum=1),
    _broker("metadata.log.max.record.bytes.between.snapshots", _L,
            "Bytes of metadata records applied before a controller snapshots its log.", minimum=1),
)


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
        definition = BROKER_CONFIGS.get(name) or ConfigDef(name, ConfigType.STRING, None, "Broker property.")
        synonyms = [Synonym(name, definition.default, ConfigSource.DEFAULT_CONFIG)]
        if name in broker.properties and broker.properties[name] != definition.default:
            synonyms.insert(0, Synonym(name, broker.properties[name], ConfigSource.STATIC_BROKER_CONFIG))
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


_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Keys of features this broker does not have yet: refused, so nobody believes the broker is secured.
_UNSUPPORTED_PREFIXES = {
    "ssl.": "TLS", "sasl.": "SASL authentication", "listener.name.": "per-listener TLS/SASL settings",
    "security.inter.broker.protocol": "TLS/SASL between brokers", "authorizer.class.name": "ACL authorization",
    "super.users": "ACL authorization", "principal.builder.class": "TLS/SASL principals",
}  # fmt: skip
_SIZE_WITH_UNIT = re.compile(r"^\s*\d+(\.\d+)?\s*([kKmMgGtT]i?[bB]?|[bB])\s*$")


def check_broker_properties(properties: Mapping[str, str]) -> None:
    """Refuse an unknown broker property or a value its type, range or choices do not allow, with one line
    naming the key, the value and what is allowed. Apache Kafka refuses bad values at start-up too
    (ConfigException from ConfigDef.parse; booleans must be true/false) but only warns about unknown
    keys; this broker refuses those as well, suggesting the nearest known key, so a typo never goes unseen."""
    for key, value in properties.items():
        definition = BROKER_CONFIGS.get(key)
        if definition is None:
            raise ConfigError(_unknown_key_message(key))
        try:
            _checked_value(definition, value)
            check = _SPECIAL_CHECKS.get(key)
            if check is not None and value.strip():
                check(value)
        except InvalidConfig as exc:
            hint = ""
            if key.endswith(".bytes") and _SIZE_WITH_UNIT.match(value):
                hint = " (sizes are plain byte counts: 1GB is 1073741824)"
            raise ConfigError(f"broker property {exc}{hint}") from None
        except ConfigError as exc:
            raise ConfigError(f"broker property {key}={value!r}: {exc}") from None


def _unknown_key_message(key: str) -> str:
    for prefix, feature in _UNSUPPORTED_PREFIXES.items():
        if key.startswith(prefix):
            return f"broker property {key}: {feature} is not supported yet by this broker (PLAINTEXT only); remove it"
    if key in TOPIC_CONFIGS:
        broker_names = [prop for prop, _ in TOPIC_CONFIGS[key].synonyms]
        where = f"; the broker-wide default is {broker_names[0]}" if broker_names else ""
        return (f"{key} is a topic config, not a broker property{where}; set it per topic with"
                " kafka-configs --entity-type topics or CreateTopics")
    close = difflib.get_close_matches(key, BROKER_CONFIGS, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else "; docs/configuration.md lists the broker properties"
    return f"unknown broker property {key!r}{hint}"


def _check_listeners(value: str) -> None:
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    for entry in entries:
        protocol = entry.partition("://")[0].upper()
        if protocol in _SECURITY_PROTOCOLS[1:]:
            raise ConfigError(f"{protocol} listeners are not supported yet by this broker; use PLAINTEXT://HOST:PORT")
        Listener.parse(entry)
    if len(entries) > 1:
        raise ConfigError("this broker serves one listener (the controller port comes from controller.quorum.voters)"
                          "; give one PLAINTEXT://HOST:PORT")


def _check_protocol_map(value: str) -> None:
    for entry in (item.strip() for item in value.split(",") if item.strip()):
        name, sep, protocol = entry.partition(":")
        if not sep or not name or protocol.upper() not in _SECURITY_PROTOCOLS:
            raise ConfigError(f"entry {entry!r} is not LISTENER:PROTOCOL with PROTOCOL one of"
                              f" {', '.join(_SECURITY_PROTOCOLS)}")
        if protocol.upper() != "PLAINTEXT":
            raise ConfigError(f"security protocol {protocol.upper()} is not supported yet by this broker;"
                              " only PLAINTEXT")


_SPECIAL_CHECKS: Mapping[str, Callable[[str], object]] = MappingProxyType({
    "listeners": _check_listeners,
    "advertised.listeners": _check_listeners,
    "listener.security.protocol.map": _check_protocol_map,
    "controller.quorum.voters": parse_voters,
})  # fmt: skip
