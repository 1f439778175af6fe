"""Broker configuration with Kafka's property names.

Sources, later wins: defaults < `--config FILE` (server.properties `k=v` lines, or YAML when the file
ends in .yaml/.yml) < `--set k=v` < the explicit CLI flags (--data-dir, --listeners).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from broker.protocol.errors import ProtocolError


class ConfigError(ProtocolError):
    """A configuration value is missing or invalid; the message names the key and the fix."""


# Broker defaults: the Kafka defaults, except where a single-node broker needs otherwise.
DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "node.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "advertised.listeners": "",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "log.dirs": "",
        "auto.create.topics.enable": "true",
        "num.partitions": "1",
        "default.replication.factor": "1",
        "message.max.bytes": "1048588",
        "socket.request.max.bytes": "104857600",
        # Kafka's default is -1 (no limit); a bound here keeps many slow or stalled clients from
        # holding unbounded memory in half-read requests (see broker/protocol/memory_pool.py).
        "queued.max.request.bytes": "104857600",
        "group.initial.rebalance.delay.ms": "3000",
        "group.min.session.timeout.ms": "6000",
        "group.max.session.timeout.ms": "1800000",
        "offsets.topic.num.partitions": "50",
        "log.segment.bytes": "1073741824",
        "log.retention.hours": "168",
        "log.retention.check.interval.ms": "300000",
        "log.message.timestamp.type": "CreateTime",
        "min.insync.replicas": "1",
        "cluster.id": "lakefeed-broker-cluster",
        # Not a Kafka property (Kafka exports JMX): the port of our Prometheus endpoint; -1 serves none.
        "metrics.port": "-1",
        # Cluster membership: a node joins a cluster when controller.quorum.voters is set.
        "controller.quorum.voters": "",
        "process.roles": "broker",
        "broker.rack": "",
        "broker.session.timeout.ms": "9000",
        "broker.heartbeat.interval.ms": "2000",
        "replica.lag.time.max.ms": "30000",
        "unclean.leader.election.enable": "false",
        "offsets.topic.replication.factor": "3",
        "transaction.state.log.num.partitions": "50",
        "transaction.state.log.replication.factor": "3",
        "transaction.max.timeout.ms": "900000",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "10000",
        "metadata.log.max.record.bytes.between.snapshots": "20971520",
        # Security (broker/security/): PEM stores only; SCRAM by default, as PLAIN sends passwords.
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "",
        "ssl.keystore.certificate.chain": "",
        "ssl.keystore.key": "",
        "ssl.keystore.password": "",
        "ssl.key.password": "",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "",
        "ssl.truststore.certificates": "",
        "ssl.truststore.password": "",
        "ssl.client.auth": "none",
        "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
        "ssl.endpoint.identification.algorithm": "https",
        # Which listener brokers and the controller quorum use (broker/security/listeners.py): empty means the
        # first listener and a PLAINTEXT quorum.
        "inter.broker.listener.name": "",
        "controller.listener.names": "",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "super.users": "",
        "authorizer.class.name": "",
        "allow.everyone.if.no.acl.found": "false",
    }
)

@dataclass(frozen=True)
class Listener:
    """The address of one `NAME://HOST:PORT` listener entry (broker/security/listeners.py checks NAME)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Listener:
        scheme, _, rest = text.strip().partition("://")
        host, _, port = rest.rpartition(":")
        if not scheme or not host or not port.isdigit():
            raise ConfigError(f"listener {text!r}: expected NAME://HOST:PORT, e.g. PLAINTEXT://127.0.0.1:9092")
        return cls(host, int(port))


@dataclass(frozen=True)
class BrokerConfig:
    properties: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULTS))

    def get(self, key: str) -> str:
        return self.properties.get(key, DEFAULTS.get(key, ""))

    def int(self, key: str) -> int:
        value = self.get(key)
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"config {key}={value!r} is not an integer; set it with --set {key}=N") from None

    def bool(self, key: str) -> builtins.bool:
        return self.get(key).lower() == "true"

    @property
    def node_id(self) -> builtins.int:
        return self.int("node.id")

    @property
    def listener(self) -> Listener:
        return Listener.parse(self.get("listeners").split(",")[0])

    @property
    def advertised(self) -> Listener:
        text = self.get("advertised.listeners")
        return Listener.parse(text.split(",")[0]) if text else self.listener

    @property
    def data_dir(self) -> Path:
        text = self.get("log.dirs")
        if not text:
            raise ConfigError("no data directory: pass --data-dir DIR or set log.dirs")
        return Path(text.split(",")[0])

    def is_default(self, key: str) -> builtins.bool:
        return key not in self.properties or self.properties[key] == DEFAULTS.get(key)

    def with_overrides(self, overrides: Mapping[str, str]) -> BrokerConfig:
        merged = dict(self.properties)
        merged.update(overrides)
        return BrokerConfig(merged)


def parse_properties(text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ConfigError(f"line {number}: {line!r} is not key=value")
        result[key.strip()] = value.strip()
    return result


def _flatten(data: Any, prefix: str = "") -> dict[str, str]:
    if not isinstance(data, dict):
        return {prefix: "" if data is None else str(data).lower() if isinstance(data, bool) else str(data)}
    result: dict[str, str] = {}
    for key, value in data.items():
        result.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return result


def load_file(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        data = yaml.safe_load(text) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: YAML config must be a mapping of Kafka property names")
        return _flatten(data)
    return parse_properties(text)


def parse_set(values: tuple[str, ...]) -> dict[str, str]:
    result = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set num.partitions=3")
        result[key.strip()] = value.strip()
    return result


def parse_voters(spec: str) -> dict[int, tuple[str, int]]:
    """Kafka's `controller.quorum.voters`: `1@host:port,2@host:port` -> {1: (host, port), ...}."""
    out: dict[int, tuple[str, int]] = {}
    for part in spec.split(","):
        try:
            node, address = part.strip().split("@")
            host, port = address.rsplit(":", 1)
            out[int(node)] = (host, int(port))
        except ValueError:
            raise ConfigError(
                f"controller.quorum.voters entry {part!r} is not ID@HOST:PORT (e.g. 1@127.0.0.1:19093)"
            ) from None
    return out
