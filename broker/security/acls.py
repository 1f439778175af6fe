"""ACL bindings and filters with Apache Kafka's codes and matching rules, and their store.

Codes are those of Kafka's `ResourceType`, `PatternType`, `AclOperation` and `AclPermissionType`. A binding
is (resource type, name, pattern type LITERAL|PREFIXED, principal, host, operation, ALLOW|DENY); `*` as a
LITERAL name, principal (`User:*`) or host matches everything. Filters (DescribeAcls/DeleteAcls) follow
`AclBindingFilter`: ANY matches every value, a null string matches every value, pattern type MATCH selects
the bindings that would apply to the named resource (its LITERAL name, the `*` wildcard, PREFIXED prefixes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import IntEnum
from pathlib import Path
from typing import Protocol

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError
from broker.security import json_file


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def covers(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's resource pattern applies to the resource `name`."""
        if self.resource_type is not resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclFilter:
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (Operation.ANY, acl.operation)
                and self.permission in (Permission.ANY, acl.permission))

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type is PatternType.PREFIXED:
                return self.resource_name.startswith(acl.resource_name)
            return acl.resource_name in (self.resource_name, WILDCARD)
        if self.pattern_type != PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name


def new_binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str, operation: int,
                permission: int) -> AclBinding:
    """A binding from CreateAcls fields; INVALID_REQUEST naming the field Kafka would refuse."""
    def refuse(message: str) -> KafkaApiError:
        return KafkaApiError(ErrorCode.invalid_request, message)

    try:
        kind, pattern = ResourceType(resource_type), PatternType(pattern_type)
        op, perm = Operation(operation), Permission(permission)
    except ValueError as exc:
        raise refuse(f"invalid ACL: {exc}") from None
    if kind in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise refuse(f"invalid ACL resource type {kind.name}")
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise refuse(f"invalid ACL pattern type {pattern.name}: LITERAL or PREFIXED")
    if op in (Operation.ANY, Operation.UNKNOWN) or perm in (Permission.ANY, Permission.UNKNOWN):
        raise refuse(f"invalid ACL operation {op.name} or permission {perm.name}")
    if not name:
        raise refuse("ACL resource name must not be empty")
    if kind is ResourceType.CLUSTER and (name != CLUSTER_NAME or pattern is not PatternType.LITERAL):
        raise refuse(f"the CLUSTER resource is the LITERAL name {CLUSTER_NAME!r}")
    ptype, sep, pname = principal.partition(":")
    if not sep or not ptype or not pname:
        raise refuse(f"principal {principal!r} is not TYPE:NAME, e.g. User:alice")
    return AclBinding(kind, name, pattern, principal, host or WILDCARD, op, perm)


class AclStore(Protocol):
    """Where ACL bindings live: a file on a single node (FileAclStore), the cluster metadata on a cluster node
    (broker/cluster/security_stores.py). Kafka's set semantics: adding a binding twice keeps one."""

    def all(self) -> Sequence[AclBinding]: ...

    async def add(self, bindings: Sequence[AclBinding]) -> None:
        """Keep every binding or none; KafkaApiError when they cannot be kept."""

    async def remove(self, acl_filter: AclFilter) -> list[AclBinding]:
        """Delete the bindings the filter matches and return them; KafkaApiError when that cannot be kept."""


class FileAclStore:
    """Every ACL binding, persisted in one JSON file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        raw = json_file.load(path, [])
        self._acls: list[AclBinding] = [
            AclBinding(ResourceType(a["resource_type"]), a["resource_name"], PatternType(a["pattern_type"]),
                       a["principal"], a["host"], Operation(a["operation"]), Permission(a["permission"]))
            for a in raw
        ]

    def all(self) -> Sequence[AclBinding]:
        return self._acls

    async def add(self, bindings: Sequence[AclBinding]) -> None:
        new = [b for b in dict.fromkeys(bindings) if b not in self._acls]
        if new:
            self._acls = [*self._acls, *new]  # a new list: a reader iterating the old one is not disturbed
            self._save()

    async def remove(self, acl_filter: AclFilter) -> list[AclBinding]:
        removed = [acl for acl in self._acls if acl_filter.matches(acl)]
        if removed:
            self._acls = [acl for acl in self._acls if acl not in removed]
            self._save()
        return removed

    def _save(self) -> None:
        json_file.save(self._path, [
            {key: int(value) if isinstance(value, IntEnum) else value for key, value in asdict(acl).items()}
            for acl in self._acls
        ])
