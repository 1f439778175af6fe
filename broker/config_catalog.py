"""Every topic and broker config the broker knows: Kafka's name, type, default, broker synonyms.

DescribeConfigs answers from here (value, source, synonyms, type, documentation) and Create/Alter
validate against it. Topic configs follow Apache Kafka 4's list; `applied=False` marks the ones a
single-node broker stores and reports but does not act on (replication throttles, tiered storage,
compression levels, ...), and their documentation says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

from broker.config import DEFAULTS, BrokerConfig

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
    names = dict.fromkeys([*DEFAULTS, *_SYNONYM_DEFAULTS, *broker.properties])
    for definition in TOPIC_CONFIGS.values():
        names.update(dict.fromkeys(prop for prop, _ in definition.synonyms))
    entries = []
    for name in sorted(names):
        topic_def = next((d for d in TOPIC_CONFIGS.values() if d.synonyms and d.synonyms[0][0] == name), None)
        default = DEFAULTS.get(name, _SYNONYM_DEFAULTS.get(name, topic_def.default if topic_def else None))
        kind = topic_def.kind if topic_def else _broker_kind(default)
        definition = ConfigDef(name, kind, default, topic_def.doc if topic_def else "Broker property.")
        synonyms = [Synonym(name, default, ConfigSource.DEFAULT_CONFIG)]
        if name in broker.properties and broker.properties[name] != default:
            synonyms.insert(0, Synonym(name, broker.properties[name], ConfigSource.STATIC_BROKER_CONFIG))
        first = synonyms[0]
        entries.append(ConfigEntry(definition, first.value, first.source, tuple(synonyms), read_only=True))
    return entries


def _broker_kind(default: str | None) -> ConfigType:
    if default in ("true", "false"):
        return ConfigType.BOOLEAN
    if default is not None and default.lstrip("-").isdigit():
        return ConfigType.LONG if abs(int(default)) > 2**31 - 1 else ConfigType.INT
    return ConfigType.STRING


class InvalidConfig(ValueError):
    """A config name or value a topic cannot take; the message names it and the accepted values."""


def validate_topic_config(name: str, value: str | None) -> str | None:
    """The normalized value, or raise InvalidConfig. None (delete / reset to default) is always valid."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise InvalidConfig(f"unknown topic config {name!r}; known: {', '.join(sorted(TOPIC_CONFIGS))}")
    if value is None:
        return None
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
