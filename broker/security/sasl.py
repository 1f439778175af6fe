"""SaslHandshake (17) v1 and SaslAuthenticate (36) with PLAIN (RFC 4616), SCRAM-SHA-256 and SCRAM-SHA-512
(RFC 5802/7677), after Apache Kafka's SaslServerAuthenticator.

A SASL listener's connection may send only ApiVersions, then SaslHandshake naming a mechanism from
`sasl.enabled.mechanisms`, then SaslAuthenticate rounds carrying the mechanism's tokens; the login
succeeds with principal `User:<name>`. A failed login answers SASL_AUTHENTICATION_FAILED with Kafka's
message ("Authentication failed during authentication due to invalid credentials with SASL mechanism
...") and leaves the connection unauthenticated. The SCRAM exchange itself is the `scramp` library's.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from scramp import ScramException, ScramMechanism  # type: ignore[import-untyped]

from broker.config import BrokerConfig
from broker.security.jaas import plain_users
from broker.security.listeners import ListenerSpec
from broker.security.scram import MIN_ITERATIONS, CredentialStore
from broker.security.session import Session
from broker.security.tls import setting

log = logging.getLogger("broker.security.sasl")


@dataclass(frozen=True, slots=True)
class SaslReply:
    error: ErrorCode
    message: str | None
    auth_bytes: bytes = b""


class SaslAuthenticator:
    def __init__(self, config: BrokerConfig, listeners: tuple[ListenerSpec, ...], credentials: CredentialStore) -> None:
        self._credentials = credentials
        self._enabled = {
            spec.name: tuple(m.strip() for m in setting(config, spec.name, "sasl.enabled.mechanisms").split(",")
                             if m.strip())
            for spec in listeners
        }
        self._plain = {
            spec.name: plain_users(config.get(f"listener.name.{spec.name.lower()}.plain.sasl.jaas.config"))
            for spec in listeners
        }

    def handshake(self, session: Session, mechanism: str) -> tuple[ErrorCode, tuple[str, ...]]:
        enabled = self._enabled.get(session.listener.name, ())
        if not session.listener.uses_sasl or session.mechanism is not None:
            return ErrorCode.illegal_sasl_state, enabled
        if mechanism not in enabled:
            return ErrorCode.unsupported_sasl_mechanism, enabled
        session.mechanism = mechanism
        return ErrorCode.none, enabled

    def authenticate(self, session: Session, token: bytes) -> SaslReply:
        mechanism = session.mechanism
        if mechanism is None or (session.authenticated and session.exchange is None):
            return SaslReply(ErrorCode.illegal_sasl_state, "SaslAuthenticate before SaslHandshake, or after login")
        if mechanism == "PLAIN":
            return self._plain_login(session, token)
        return self._scram_round(session, mechanism, token)

    def _plain_login(self, session: Session, token: bytes) -> SaslReply:
        parts = token.split(b"\0")
        if len(parts) != 3:
            return self._failed(session, "PLAIN", "?", "Authentication failed: invalid SASL/PLAIN request")
        authzid, user, password = (part.decode("utf-8", "replace") for part in parts)
        expected = self._plain.get(session.listener.name, {}).get(user)
        if authzid and authzid != user:
            return self._failed(session, "PLAIN", user, "Authentication failed: Client requested an authorization"
                                " id that is different from username")
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            return self._failed(session, "PLAIN", user, "Authentication failed: Invalid username or password")
        return self._succeeded(session, user)

    def _scram_round(self, session: Session, mechanism: str, token: bytes) -> SaslReply:
        invalid = ("Authentication failed during authentication due to invalid credentials with SASL mechanism"
                   f" {mechanism}")
        server = session.exchange
        try:
            if server is None:
                server = session.exchange = ScramMechanism(mechanism).make_server(
                    lambda user: self._auth_info(user, mechanism))
                server.set_client_first(token.decode("utf-8"))
                return SaslReply(ErrorCode.none, None, server.get_server_first().encode("utf-8"))
            # The final nonce must equal the server-first one (RFC 5802; Kafka 4's ScramSaslServer checks equals,
            # so librdkafka 2.0's repeated client nonce fails against both).
            server.set_client_final(token.decode("utf-8"))
            final = server.get_server_final().encode("utf-8")
        except (ScramException, UnicodeDecodeError) as exc:
            session.exchange = None
            user = _scram_user(getattr(server, "client_first_bare", None) or "")
            return self._failed(session, mechanism, user, invalid, str(exc))
        session.exchange = None
        reply = self._succeeded(session, _scram_user(server.client_first_bare))
        return SaslReply(reply.error, reply.message, final)

    def _auth_info(self, user: str, mechanism: str) -> tuple[bytes, bytes, bytes, int] | None:
        credential = self._credentials.get(user, mechanism)
        if credential is None or credential.iterations < MIN_ITERATIONS:
            return None
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _succeeded(self, session: Session, user: str) -> SaslReply:
        session.principal = f"User:{user}"
        session.authenticated = True
        log.info("SASL login", extra={"principal": session.principal, "mechanism": session.mechanism,
                                      "peer": session.client_host, "listener": session.listener.name})
        return SaslReply(ErrorCode.none, None)

    def _failed(self, session: Session, mechanism: str, user: str, message: str, detail: str = "") -> SaslReply:
        session.mechanism = None  # Kafka closes the connection; a client may only start over
        log.warning("failed SASL authentication from %s (%s): %s%s", session.client_host, mechanism, message,
                    f" [{detail}]" if detail else "", extra={"user": user, "listener": session.listener.name})
        return SaslReply(ErrorCode.sasl_authentication_failed, message)


def _scram_user(client_first_bare: str) -> str:
    # RFC 5802 saslname: "=2C" is ',' and "=3D" is '='.
    for attribute in client_first_bare.split(","):
        if attribute.startswith("n="):
            return attribute[2:].replace("=2C", ",").replace("=3D", "=")
    return "?"
