"""Kafka's `listeners`, `advertised.listeners`, `listener.security.protocol.map`, `inter.broker.listener.name`
and `controller.listener.names`.

After Apache Kafka's SocketServerConfigs: each listener is `NAME://HOST:PORT`; NAME is a security protocol
(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) or any name that `listener.security.protocol.map` maps to one.
Clients get the advertised address of the listener they connected through (Kafka answers Metadata per
listener), which the connection layer records in `CURRENT_LISTENER` for the handlers.

In a cluster (KRaft), as Kafka's KafkaConfig: other brokers connect through the `inter.broker.listener.name`
listener (here: the first listener when unset), and the controller quorum speaks the security protocol that the
map gives the first name of `controller.listener.names` (here: PLAINTEXT when unset). A controller listener
named in `listeners` is the quorum's port, not a Kafka listener.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from broker.config import BrokerConfig, ConfigError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in PROTOCOLS)

# The listener of the connection whose request is being handled (set once per connection task).
CURRENT_LISTENER: contextvars.ContextVar[str] = contextvars.ContextVar("broker_listener", default="")


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str  # upper case, as Kafka normalizes listener names
    protocol: str
    host: str
    port: int

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def protocol_map(text: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` -> {NAME: PROTOCOL}; raises ConfigError naming the bad entry."""
    out: dict[str, str] = {}
    for entry in (item.strip() for item in text.split(",") if item.strip()):
        name, sep, protocol = entry.partition(":")
        if not sep or not name or protocol.upper() not in PROTOCOLS:
            raise ConfigError(f"entry {entry!r} is not LISTENER:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}")
        out[name.strip().upper()] = protocol.upper()
    return out


def parse_listeners(text: str, protocols: dict[str, str]) -> tuple[ListenerSpec, ...]:
    """`NAME://HOST:PORT,...` -> one ListenerSpec per entry; names must be unique and mapped to a protocol."""
    specs: list[ListenerSpec] = []
    for entry in (item.strip() for item in text.split(",") if item.strip()):
        name, sep, rest = entry.partition("://")
        host, _, port = rest.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"listener {entry!r}: expected NAME://HOST:PORT, e.g. SASL_SSL://127.0.0.1:9093")
        name = name.upper()
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(f"listener {entry!r}: {name} is not a security protocol and has no entry in"
                              f" listener.security.protocol.map; add {name}:PLAINTEXT (or SSL, SASL_SSL, ...)")
        if any(spec.name == name for spec in specs):
            raise ConfigError(f"listener name {name} appears twice in {text!r}; each listener needs its own name")
        specs.append(ListenerSpec(name, protocol, host, int(port)))
    if not specs:
        raise ConfigError("no listener: set listeners=PLAINTEXT://HOST:PORT (or SSL://, SASL_SSL://, ...)")
    return tuple(specs)


def all_listeners(config: BrokerConfig) -> tuple[ListenerSpec, ...]:
    """Every `listeners` entry, the controller's included."""
    return parse_listeners(config.get("listeners"), protocol_map(config.get("listener.security.protocol.map")))


def listeners(config: BrokerConfig) -> tuple[ListenerSpec, ...]:
    """The Kafka listeners (clients and brokers): every `listeners` entry but the controller's."""
    controller = controller_listener_names(config)
    specs = tuple(spec for spec in all_listeners(config) if spec.name not in controller)
    if not specs:
        raise ConfigError(f"listeners={config.get('listeners')!r} has only controller listeners"
                          f" ({', '.join(controller)}): add one for clients, e.g. SSL://127.0.0.1:9093")
    return specs


def controller_listener_names(config: BrokerConfig) -> tuple[str, ...]:
    return tuple(name.strip().upper() for name in config.get("controller.listener.names").split(",") if name.strip())


def controller_protocol(config: BrokerConfig) -> tuple[str, str]:
    """(listener name, security protocol) of the controller quorum: the first `controller.listener.names` entry
    and its protocol in `listener.security.protocol.map`; ("", "PLAINTEXT") when none is named."""
    names = controller_listener_names(config)
    if not names:
        return "", "PLAINTEXT"
    protocol = protocol_map(config.get("listener.security.protocol.map")).get(names[0])
    if protocol is None:
        raise ConfigError(f"controller.listener.names names {names[0]}, which has no entry in"
                          f" listener.security.protocol.map; add {names[0]}:SSL (or PLAINTEXT)")
    return names[0], protocol


def inter_broker_listener(config: BrokerConfig) -> ListenerSpec:
    """The listener other brokers connect to (Kafka's `inter.broker.listener.name`; the first listener when
    unset, where Kafka would pick the PLAINTEXT one through `security.inter.broker.protocol`)."""
    specs = listeners(config)
    name = config.get("inter.broker.listener.name").strip().upper()
    if not name:
        return specs[0]
    for spec in specs:
        if spec.name == name:
            return spec
    raise ConfigError(f"inter.broker.listener.name={name} is not one of the listeners"
                      f" ({', '.join(s.name for s in specs)}); name the listener other brokers should use")


def advertised(config: BrokerConfig, name: str = "") -> tuple[str, int]:
    """(host, port) clients should use for listener `name` (the first listener when empty or unknown):
    its `advertised.listeners` entry, else its `listeners` entry (as Kafka defaults it)."""
    protocols = protocol_map(config.get("listener.security.protocol.map"))
    specs = listeners(config)
    text = config.get("advertised.listeners")
    if text:
        specs = parse_listeners(text, protocols) + specs
    spec = next((s for s in specs if s.name == name), specs[0])
    return spec.host, spec.port


def advertised_endpoints(config: BrokerConfig) -> tuple[tuple[str, str, int], ...]:
    """(listener name, host, port) clients and brokers use, one per Kafka listener: what a cluster node registers
    (Kafka's RegisterBrokerRecord endpoints)."""
    return tuple((spec.name, *advertised(config, spec.name)) for spec in listeners(config))
