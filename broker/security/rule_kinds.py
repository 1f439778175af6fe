"""The kinds of access rule broker/security/access.py's table is made of, and what every rule knows about
its caller: a rule gets the request before its handler and either passes it on, passes a request with the
denied items taken out (answering those itself), or answers the whole request with the error."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.protocol.apis import response_class
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType
from broker.security.authorizer import Authorizer

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

Handler = Callable[["BrokerState", "Request"], Awaitable[Any]]
TAF, GAF, CAF = (ErrorCode.topic_authorization_failed, ErrorCode.group_authorization_failed,
                 ErrorCode.cluster_authorization_failed)
TXN_AF = ErrorCode.transactional_id_authorization_failed
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
NO_OPERATIONS = -2147483648
# Config resource types of Describe/Alter/IncrementalAlterConfigs (Kafka's ConfigResource.Type).
CONFIG_TOPIC, CONFIG_BROKER = 2, 4


@dataclass(frozen=True, slots=True)
class Caller:
    authorizer: Authorizer
    principal: str
    host: str

    def may(self, operation: Operation, kind: ResourceType, name: str) -> bool:
        return self.authorizer.allowed(self.principal, self.host, operation, kind, name)

    def may_cluster(self, operation: Operation) -> bool:
        return self.may(operation, CLUSTER, CLUSTER_NAME)


Rule = Callable[[Caller, "BrokerState", "Request", Handler], Awaitable[Any]]


class AccessDenied(Exception):
    """A request that cannot be answered with an error code (acks=0 Produce): the connection is closed."""


def with_body(request: Request, **changes: Any) -> Request:
    return dataclasses.replace(request, body=dataclasses.replace(request.body, **changes))


def per_item(
    field: str,
    allowed: Callable[[Caller, BrokerState, Any], bool],
    answer: Callable[[Any, Any, Request], Any],
    response_field: str,
) -> Rule:
    """Requests listing resources in `field`: denied items are left out of the request and answered by
    `answer(response class, item, request)` in `response_field`."""
    async def rule(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
        items = getattr(request.body, field)
        if items is None:
            return await handler(state, request)
        kept = tuple(item for item in items if allowed(caller, state, item))
        if len(kept) == len(items):
            return await handler(state, request)
        denied = [item for item in items if item not in kept]
        response = await handler(state, with_body(request, **{field: kept}))
        if response is None:
            return None
        cls = type(response)
        extra = tuple(answer(cls, item, request) for item in denied)
        return dataclasses.replace(response, **{response_field: (*getattr(response, response_field), *extra)})
    return rule


def whole(allowed: Callable[[Caller, Request], bool], answer: Callable[[Any, Request], Any]) -> Rule:
    async def rule(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
        if allowed(caller, request):
            return await handler(state, request)
        return answer(response_class(request.header.api_key, request.header.api_version), request)
    return rule


def filtered(keep: Callable[[Caller, Any, Any], Any]) -> Rule:
    """Run the handler, then let `keep(caller, response, request)` reshape what it may see."""
    async def rule(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
        return keep(caller, await handler(state, request), request)
    return rule


def cluster(operation: Operation) -> Callable[[Caller, Request], bool]:
    """For `whole`: the caller may do `operation` on the cluster."""
    return lambda caller, request: caller.may_cluster(operation)
