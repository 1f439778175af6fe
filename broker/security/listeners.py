"""Kafka's `listeners`, `advertised.listeners` and `listener.security.protocol.map`.

After Apache Kafka's SocketServerConfigs: each listener is `NAME://HOST:PORT`; NAME is a security protocol
(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) or any name that `listener.security.protocol.map` maps to one.
Clients get the advertised address of the listener they connected through (Kafka answers Metadata per
listener), which the connection layer records in `CURRENT_LISTENER` for the handlers.
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


def listeners(config: BrokerConfig) -> tuple[ListenerSpec, ...]:
    return parse_listeners(config.get("listeners"), protocol_map(config.get("listener.security.protocol.map")))


def advertised(config: BrokerConfig, name: str = "") -> tuple[str, int]:
    """(host, port) clients should use for listener `name` (the first listener when empty or unknown):
    its `advertised.listeners` entry, else its `listeners` entry (as Kafka defaults it)."""
    protocols = protocol_map(config.get("listener.security.protocol.map"))
    specs = parse_listeners(config.get("listeners"), protocols)
    text = config.get("advertised.listeners")
    if text:
        specs = parse_listeners(text, protocols) + specs
    spec = next((s for s in specs if s.name == name), specs[0])
    return spec.host, spec.port
