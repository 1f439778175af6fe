"""Kafka's StandardAuthorizer decision (org.apache.kafka.metadata.authorizer.StandardAuthorizerData):

1. a super user (`super.users`) is allowed everything;
2. the ACLs whose resource pattern covers the resource, whose principal is the caller's or `User:*` and
   whose host is the caller's or `*` are considered; any DENY for the operation (or ALL) denies: deny wins;
3. an ALLOW for the operation, for ALL, or for an operation that implies it allows: READ, WRITE, DELETE and
   ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS;
4. otherwise, when no ACL at all exists for a resource pattern covering the resource,
   `allow.everyone.if.no.acl.found` decides; else the request is denied.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.security.acls import WILDCARD, AclBinding, AclStore, Operation, Permission, ResourceType

_IMPLIED_BY = {
    Operation.DESCRIBE: frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}
_WILDCARD_USER = "User:*"


class Authorizer:
    def __init__(self, config: BrokerConfig, store: AclStore) -> None:
        self.store = store
        self.super_users = frozenset(p.strip() for p in config.get("super.users").split(";") if p.strip())
        self.allow_if_no_acl = config.bool("allow.everyone.if.no.acl.found")

    def allowed(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
                name: str) -> bool:
        if principal in self.super_users:
            return True
        covering = [acl for acl in self.store.all() if acl.covers(resource_type, name)]
        mine = [acl for acl in covering if _applies(acl, principal, host)]
        if any(acl.permission is Permission.DENY and acl.operation in (operation, Operation.ALL) for acl in mine):
            return False
        implied = _IMPLIED_BY.get(operation, frozenset())
        if any(acl.permission is Permission.ALLOW and (acl.operation in (operation, Operation.ALL)
                                                       or acl.operation in implied) for acl in mine):
            return True
        return not covering and self.allow_if_no_acl

    def allowed_on_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType, simplified: some ALLOW for the operation on a resource of this type
        that no DENY of the same pattern cancels (used for idempotent producers: WRITE on any topic)."""
        if principal in self.super_users:
            return True
        mine = [acl for acl in self.store.all()
                if acl.resource_type is resource_type and _applies(acl, principal, host)]
        denied = {(acl.resource_name, acl.pattern_type) for acl in mine if acl.permission is Permission.DENY
                  and acl.operation in (operation, Operation.ALL)}
        return any(acl.permission is Permission.ALLOW and acl.operation in (operation, Operation.ALL)
                   and (acl.resource_name, acl.pattern_type) not in denied for acl in mine)


def _applies(acl: AclBinding, principal: str, host: str) -> bool:
    return acl.principal in (principal, _WILDCARD_USER) and acl.host in (host, WILDCARD)
