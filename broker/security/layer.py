"""The one seam between the connection layer (broker/server.py) and broker security.

The server asks it for each listener's TLS context, opens a `Session` per connection, and passes every
decoded request through `respond`, which (in this order, as Kafka's SocketServer/KafkaApis do):
1. answers SaslHandshake/SaslAuthenticate (only these and ApiVersions before a SASL login succeeds;
   anything else closes the connection, Kafka's IllegalSaslStateException);
2. answers the security admin APIs (ACLs, SCRAM credentials) itself;
3. authorizes the request against the ACLs (when `authorizer.class.name` is set) and lets the API's
   handler see only the resources the principal may touch; the others get *_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from broker.config import BrokerConfig
from broker.protocol.apis import api_key, response_class
from broker.protocol.errors import FrameError
from broker.security import scram_admin
from broker.security.listeners import ListenerSpec, listeners
from broker.security.sasl import SaslAuthenticator
from broker.security.scram import CredentialStore
from broker.security.session import Session
from broker.security.tls import peer_principal, server_context

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

Handler = Callable[["BrokerState", "Request"], Awaitable[Any]]

_API_VERSIONS, _SASL_HANDSHAKE, _SASL_AUTHENTICATE = (
    api_key("api_versions"), api_key("sasl_handshake"), api_key("sasl_authenticate"))
_DESCRIBE_SCRAM, _ALTER_SCRAM = api_key("describe_user_scram_credentials"), api_key("alter_user_scram_credentials")


class SecurityLayer:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.listeners = listeners(config)
        self._contexts = {spec.name: server_context(config, spec.name) for spec in self.listeners if spec.uses_tls}
        self.credentials = CredentialStore(config.data_dir / "scram-credentials.json")
        self.sasl = SaslAuthenticator(config, self.listeners, self.credentials)

    def ssl_context(self, spec: ListenerSpec) -> ssl.SSLContext | None:
        return self._contexts.get(spec.name)

    def open_session(self, spec: ListenerSpec, client_host: str, ssl_object: ssl.SSLObject | None) -> Session:
        session = Session(spec, client_host, authenticated=not spec.uses_sasl)
        principal = peer_principal(ssl_object) if spec.protocol == "SSL" else None
        if principal is not None:
            session.principal = principal
        return session

    async def respond(self, state: BrokerState, session: Session, request: Request, handler: Handler | None) -> Any:
        key, version = request.header.api_key, request.header.api_version
        if key == _SASL_HANDSHAKE:
            code, mechanisms = self.sasl.handshake(session, request.body.mechanism)
            return response_class(key, version)(error_code=code, mechanisms=mechanisms)
        if key == _SASL_AUTHENTICATE:
            reply = self.sasl.authenticate(session, request.body.auth_bytes)
            return _build(response_class(key, version), error_code=reply.error, error_message=reply.message,
                          auth_bytes=reply.auth_bytes)
        if not session.authenticated and key != _API_VERSIONS:
            raise SecurityFrameError(
                f"{request.header.client_id!r} sent api key {key} on SASL listener {session.listener.name} before"
                " authenticating (SaslHandshake + SaslAuthenticate come first)")
        if key == _DESCRIBE_SCRAM:
            return scram_admin.describe(self.credentials, key, version, request.body)
        if key == _ALTER_SCRAM:
            return scram_admin.alter(self.credentials, key, version, request.body)
        if handler is None:
            raise SecurityFrameError(f"api key {key} has no handler")
        return await handler(state, request)


def _build(cls: Any, **values: Any) -> Any:
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in values.items() if k in names})


class SecurityFrameError(FrameError):
    """A request the connection's security state does not allow: the connection is closed (as Kafka does)."""
