"""StandardAuthorizer decisions and AclBindingFilter matching, as Apache Kafka's StandardAuthorizerTest and
AclBindingFilterTest state them (no broker needed)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.protocol.errors import KafkaApiError
from broker.security.acls import AclFilter, FileAclStore, Operation, PatternType, Permission, ResourceType, new_binding
from broker.security.authorizer import Authorizer

T, G = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def _authorizer(tmp_path: Path, *acls: tuple[ResourceType, str, PatternType, str, str, Operation, Permission],
                **properties: str) -> Authorizer:
    tmp_path.mkdir(exist_ok=True)
    store = FileAclStore(tmp_path / "acls.json")
    asyncio.run(store.add([new_binding(*acl) for acl in acls]))
    return Authorizer(BrokerConfig().with_overrides(properties), store)


def test_implied_operations_wildcards_and_deny_wins(tmp_path: Path) -> None:
    authorizer = _authorizer(
        tmp_path,
        (T, "orders", LIT, "User:alice", "*", Operation.WRITE, ALLOW),
        (T, "pay-", PRE, "User:*", "10.0.0.1", Operation.READ, ALLOW),
        (T, "*", LIT, "User:bob", "*", Operation.ALL, ALLOW),
        (T, "secret", LIT, "User:bob", "*", Operation.READ, DENY),
        (G, "*", LIT, "User:alice", "*", Operation.ALTER_CONFIGS, ALLOW),
    )
    allowed = authorizer.allowed
    assert allowed("User:alice", "1.2.3.4", Operation.WRITE, T, "orders")
    assert allowed("User:alice", "1.2.3.4", Operation.DESCRIBE, T, "orders")  # WRITE implies DESCRIBE
    assert not allowed("User:alice", "1.2.3.4", Operation.READ, T, "orders")
    assert not allowed("User:alice", "1.2.3.4", Operation.WRITE, T, "orders2")
    assert allowed("User:carol", "10.0.0.1", Operation.READ, T, "pay-eu")  # User:* and PREFIXED
    assert not allowed("User:carol", "10.0.0.2", Operation.READ, T, "pay-eu")  # wrong host
    assert allowed("User:bob", "h", Operation.READ, T, "anything")
    assert not allowed("User:bob", "h", Operation.READ, T, "secret")  # deny wins over ALL on *
    assert allowed("User:bob", "h", Operation.WRITE, T, "secret")
    assert allowed("User:alice", "h", Operation.DESCRIBE_CONFIGS, G, "g1")  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    assert not allowed("User:alice", "h", Operation.READ, G, "g1")


def test_super_users_and_allow_everyone_if_no_acl_found(tmp_path: Path) -> None:
    acl = (T, "guarded", LIT, "User:alice", "*", Operation.READ, ALLOW)
    strict = _authorizer(tmp_path / "a", acl, **{"super.users": "User:admin;User:CN=ops,O=acme"})
    assert strict.allowed("User:admin", "h", Operation.ALTER, ResourceType.CLUSTER, "kafka-cluster")
    assert strict.allowed("User:CN=ops,O=acme", "h", Operation.DELETE, T, "guarded")
    assert not strict.allowed("User:eve", "h", Operation.READ, T, "open")
    lenient = _authorizer(tmp_path / "b", acl, **{"allow.everyone.if.no.acl.found": "true"})
    assert lenient.allowed("User:eve", "h", Operation.READ, T, "open")  # no ACL covers "open"
    assert not lenient.allowed("User:eve", "h", Operation.READ, T, "guarded")  # an ACL covers it: no fallback


def test_filters_and_the_store_survive_a_reload(tmp_path: Path) -> None:
    store = FileAclStore(tmp_path / "acls.json")
    asyncio.run(store.add([new_binding(T, "pay-", PRE, "User:a", "*", Operation.READ, ALLOW),
                           new_binding(T, "pay-eu", LIT, "User:a", "*", Operation.WRITE, ALLOW),
                           new_binding(T, "*", LIT, "User:b", "*", Operation.READ, DENY)]))
    # a duplicate is one ACL
    asyncio.run(store.add([new_binding(T, "pay-eu", LIT, "User:a", "*", Operation.WRITE, ALLOW)]))
    reloaded = FileAclStore(tmp_path / "acls.json")
    assert list(reloaded.all()) == list(store.all()) and len(store.all()) == 3
    match = AclFilter(ResourceType.ANY, "pay-eu", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY)
    assert len([a for a in reloaded.all() if match.matches(a)]) == 3  # prefix, literal and the * wildcard
    literal = AclFilter(T, "pay-eu", PatternType.LITERAL, None, None, Operation.ANY, Permission.ANY)
    assert [a.operation for a in reloaded.all() if literal.matches(a)] == [Operation.WRITE]
    removed = asyncio.run(reloaded.remove(AclFilter(T, None, PatternType.ANY, "User:a", None, Operation.ANY,
                                                    Permission.ANY)))
    assert len(removed) == 2 and len(FileAclStore(tmp_path / "acls.json").all()) == 1


@pytest.mark.parametrize(("fields", "message"), [
    ((ResourceType.ANY, "t", LIT, "User:a", "*", Operation.READ, ALLOW), "resource type ANY"),
    ((T, "t", PatternType.MATCH, "User:a", "*", Operation.READ, ALLOW), "pattern type MATCH"),
    ((T, "t", LIT, "alice", "*", Operation.READ, ALLOW), "is not TYPE:NAME"),
    ((ResourceType.CLUSTER, "c", LIT, "User:a", "*", Operation.ALTER, ALLOW), "'kafka-cluster'"),
])
def test_invalid_bindings_are_refused(fields: tuple[int, str, int, str, str, int, int], message: str) -> None:
    with pytest.raises(KafkaApiError, match=message):
        new_binding(*fields)
