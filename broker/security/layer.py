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

import datetime
import ssl
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.config import BrokerConfig
from broker.protocol.apis import api_key, response_class
from broker.protocol.errors import FrameError
from broker.security import acl_admin, scram_admin
from broker.security.access import RULES, UNCHECKED, AccessDenied, Caller
from broker.security.acls import AclStore, FileAclStore, Operation
from broker.security.authorizer import Authorizer
from broker.security.listeners import ListenerSpec, listeners
from broker.security.sasl import SaslAuthenticator
from broker.security.scram import CredentialStore, FileCredentialStore
from broker.security.session import Session
from broker.security.tls import peer_principal, server_context

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

Handler = Callable[["BrokerState", "Request"], Awaitable[Any]]

_API_VERSIONS, _SASL_HANDSHAKE, _SASL_AUTHENTICATE = (
    api_key("api_versions"), api_key("sasl_handshake"), api_key("sasl_authenticate"))
# Security admin APIs answered here: (answer, operation on the cluster Kafka requires, store).
_ADMIN: dict[int, tuple[Callable[[Any, int, int, Any], Awaitable[Any]], Operation, str]] = {
    api_key("describe_user_scram_credentials"): (scram_admin.describe, Operation.DESCRIBE, "credentials"),
    api_key("alter_user_scram_credentials"): (scram_admin.alter, Operation.ALTER, "credentials"),
    api_key("describe_acls"): (acl_admin.describe, Operation.DESCRIBE, "acls"),
    api_key("create_acls"): (acl_admin.create, Operation.ALTER, "acls"),
    api_key("delete_acls"): (acl_admin.delete, Operation.ALTER, "acls"),
}


class SecurityLayer:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.listeners = listeners(config)
        self._contexts = {spec.name: server_context(config, spec.name) for spec in self.listeners if spec.uses_tls}
        # A single node keeps credentials and ACLs in its data dir; a cluster node is given the cluster
        # metadata's (use_stores), before it serves.
        self.use_stores(FileCredentialStore(config.data_dir / "scram-credentials.json"),
                        FileAclStore(config.data_dir / "acls.json"))

    def use_stores(self, credentials: CredentialStore, acls: AclStore) -> None:
        self.credentials = credentials
        self.sasl = SaslAuthenticator(self.config, self.listeners, credentials)
        # No authorizer (Kafka's default): every request is allowed and the ACL APIs answer SECURITY_DISABLED.
        self.authorizer = Authorizer(self.config, acls) if self.config.get("authorizer.class.name") else None

    def ssl_context(self, spec: ListenerSpec) -> ssl.SSLContext | None:
        return self._contexts.get(spec.name)

    def open_session(self, spec: ListenerSpec, client_host: str, ssl_object: ssl.SSLObject | None) -> Session:
        session = Session(spec, client_host, authenticated=not spec.uses_sasl)
        principal = peer_principal(ssl_object) if spec.protocol == "SSL" else None
        if principal is not None:
            session.principal = principal
        return session

    def raw_token(self, session: Session, token: bytes) -> bytes:
        """The answer to one raw SASL token (after SaslHandshake v0), size-prefixed as the client expects it;
        a failed login closes the connection, as Kafka does (raw tokens cannot carry an error code)."""
        reply = self.sasl.authenticate(session, token)
        if reply.error != ErrorCode.none:
            raise SecurityFrameError(f"SASL authentication failed: {reply.message}")
        if session.authenticated and session.exchange is None:
            session.raw_tokens = False
        return len(reply.auth_bytes).to_bytes(4, "big") + reply.auth_bytes

    async def respond(self, state: BrokerState, session: Session, request: Request, handler: Handler | None) -> Any:
        key, version = request.header.api_key, request.header.api_version
        if key == _SASL_HANDSHAKE:
            code, mechanisms = self.sasl.handshake(session, request.body.mechanism)
            session.raw_tokens = version == 0 and code == ErrorCode.none
            return response_class(key, version)(error_code=code, mechanisms=mechanisms)
        if key == _SASL_AUTHENTICATE:
            reply = self.sasl.authenticate(session, request.body.auth_bytes)
            return _build(response_class(key, version), error_code=reply.error, error_message=reply.message,
                          auth_bytes=reply.auth_bytes)
        if not session.authenticated and key != _API_VERSIONS:
            raise SecurityFrameError(
                f"{request.header.client_id!r} sent api key {key} on SASL listener {session.listener.name} before"
                " authenticating (SaslHandshake + SaslAuthenticate come first)")
        caller = None if self.authorizer is None else Caller(self.authorizer, session.principal, session.client_host)
        if key in _ADMIN:
            answer, operation, store = _ADMIN[key]
            if caller is not None and not caller.may_cluster(operation):
                return _cluster_denied(key, version, request.body)
            acls = None if self.authorizer is None else self.authorizer.store
            return await answer(self.credentials if store == "credentials" else acls, key, version, request.body)
        if handler is None:
            raise SecurityFrameError(f"api key {key} has no handler")
        if caller is None or key in UNCHECKED:
            return await handler(state, request)
        rule = RULES.get(key)
        if rule is None:  # an API without a rule yet: only who may alter the cluster may use it
            if caller.may_cluster(Operation.ALTER):
                return await handler(state, request)
            raise SecurityFrameError(f"api key {key}: {session.principal} lacks ALTER on the cluster")
        try:
            return await rule(caller, state, request, handler)
        except AccessDenied as exc:
            raise SecurityFrameError(str(exc)) from None


def raw_token_size(prefix: bytes, max_bytes: int) -> int:
    size = int.from_bytes(prefix, "big", signed=True)
    if not 0 <= size <= max_bytes:
        raise SecurityFrameError(f"raw SASL token of {size} bytes (limit socket.request.max.bytes={max_bytes})")
    return size


def _cluster_denied(key: int, version: int, body: Any) -> Any:
    """CLUSTER_AUTHORIZATION_FAILED for every item of a security admin request."""
    cls = response_class(key, version)
    fields = set(cls.__dataclass_fields__)
    if "error_code" in fields:  # Describe*: one error for the whole request
        return _build(cls, throttle_time=datetime.timedelta(0), error_code=ErrorCode.cluster_authorization_failed,
                      error_message="CLUSTER_AUTHORIZATION_FAILED", results=(), resources=())
    module = sys.modules[cls.__module__]
    code, message = ErrorCode.cluster_authorization_failed, "CLUSTER_AUTHORIZATION_FAILED"
    if hasattr(body, "creations"):
        results: tuple[Any, ...] = tuple(module.AclCreationResult(error_code=code, error_message=message)
                                         for _ in body.creations)
        return cls(throttle_time=datetime.timedelta(0), results=results)
    if hasattr(body, "filters"):
        results = tuple(module.DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=())
                        for _ in body.filters)
        return cls(throttle_time=datetime.timedelta(0), filter_results=results)
    users = dict.fromkeys(c.name for c in (*body.deletions, *body.upsertions))
    return cls(throttle_time=datetime.timedelta(0), results=tuple(
        module.AlterUserScramCredentialsResult(user=u, error_code=code, error_message=message) for u in users))


def _build(cls: Any, **values: Any) -> Any:
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in values.items() if k in names})


class SecurityFrameError(FrameError):
    """A request the connection's security state does not allow: the connection is closed (as Kafka does)."""
