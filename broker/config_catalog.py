"""Every topic and broker config the broker knows: Kafka's name, type, default, broker synonyms.

DescribeConfigs answers from here (value, source, synonyms, type, documentation); broker/config_checks.py
validates topic configs and the broker's own properties against it. Topic configs follow Apache Kafka 4's
list; `applied=False` marks the ones a single-node broker stores and reports but does not act on
(replication throttles, tiered storage, compression levels, ...), and their documentation says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
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
JAAS_SUFFIX = ".plain.sasl.jaas.config"
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


def listener_scoped(key: str) -> ConfigDef | None:
    """The definition behind `listener.name.<listener>.<property>`, or None when the key is not one."""
    if not key.startswith("listener.name."):
        return None
    rest = key.removeprefix("listener.name.")
    listener, _, prop = rest.partition(".")
    if not listener or not prop:
        return None
    if prop in _LISTENER_SCOPED:
        return replace(BROKER_CONFIGS[prop], name=key)
    if "." + prop == JAAS_SUFFIX:
        return ConfigDef(key, ConfigType.PASSWORD, None, "PLAIN users of this listener: user_NAME=\"password\".")
    if prop in _SCRAM_JAAS:
        return ConfigDef(key, ConfigType.PASSWORD, None, "Accepted so Kafka's SCRAM server.properties work unchanged;"
                         " Kafka uses it for its own inter-broker login, which this broker does not make.")
    return None


def _is_default(broker: BrokerConfig, prop: str) -> bool:
    return broker.properties.get(prop) == DEFAULTS.get(prop, _SYNONYM_DEFAULTS.get(prop))


def broker_entries(broker: BrokerConfig) -> list[ConfigEntry]:
    """Every broker property this broker reads or reports, with STATIC_BROKER_CONFIG when it was set
    (config file or --set) and DEFAULT_CONFIG otherwise. All read-only: no dynamic broker configs."""
    entries = []
    for name in sorted({*BROKER_CONFIGS, *broker.properties}):
        definition = BROKER_CONFIGS.get(name) or listener_scoped(name) or ConfigDef(
            name, ConfigType.STRING, None, "Broker property.")
        secret = definition.kind is ConfigType.PASSWORD  # Kafka never returns these values (is_sensitive)
        synonyms = [Synonym(name, None if secret else definition.default, ConfigSource.DEFAULT_CONFIG)]
        if name in broker.properties and broker.properties[name] != definition.default:
            value = None if secret else broker.properties[name]
            synonyms.insert(0, Synonym(name, value, ConfigSource.STATIC_BROKER_CONFIG))
        first = synonyms[0]
        entries.append(ConfigEntry(definition, first.value, first.source, tuple(synonyms), read_only=True))
    return entries
