"""Per-connection security state: the listener, the peer, the principal and the SASL exchange under way.

Principals are Kafka's `User:<name>` strings: `User:ANONYMOUS` on PLAINTEXT and on SSL without a client
certificate, `User:<subject DN>` with one, `User:<SASL name>` after a SASL login (Kafka's
DefaultKafkaPrincipalBuilder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.security.listeners import ListenerSpec

ANONYMOUS = "User:ANONYMOUS"


@dataclass
class Session:
    listener: ListenerSpec
    client_host: str
    principal: str = ANONYMOUS
    # SASL listeners accept only ApiVersions and SaslHandshake/SaslAuthenticate until a login succeeds.
    authenticated: bool = True
    mechanism: str | None = None  # chosen by SaslHandshake
    exchange: Any = None  # the mechanism's server state between SaslAuthenticate rounds
    # After SaslHandshake v0 the next frames are raw SASL tokens, not Kafka requests (Kafka's protocol guide,
    # "SASL Authentication Sequence").
    raw_tokens: bool = False
