"""SCRAM credentials and ACLs of a cluster node, kept in the cluster metadata.

As in KRaft (KIP-554's UserScramCredentialRecord, KIP-801's AccessControlEntryRecord), a change made through
any broker is proposed to the active controller as metadata records and answered once this broker has
applied them; every broker reads credentials and ACLs from the metadata it applied, so a user or ACL made
through one broker holds on all of them, and survives restarts through the metadata log and its snapshots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from broker.cluster.controller_client import ControllerRejected, ControllerUnavailable
from broker.cluster.node_view import NodeView
from broker.controller import records as r
from broker.protocol.errors import KafkaApiError
from broker.security.acls import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from broker.security.scram import CredentialChange, ScramCredential

_APPLY_TIMEOUT_S = 10.0


async def _propose(node: NodeView, records: list[r.Record], what: str) -> None:
    """Send the records to the active controller; return once this broker applied them. A controller that
    cannot be reached is REQUEST_TIMED_OUT (retriable: Kafka's clients retry it), nothing kept."""
    try:
        answer = await node.client.call("alter_security", records=[r.to_dict(rec) for rec in records])
        await node.wait_applied(int(answer.get("index", 0)), _APPLY_TIMEOUT_S, what)
    except ControllerUnavailable as exc:
        raise KafkaApiError(ErrorCode.request_timed_out, f"{what}: {exc}") from None
    except ControllerRejected as exc:
        raise KafkaApiError(ErrorCode.unknown_server_error, f"{what}: the controller refused it ({exc})") from None


def _credential(record: r.ScramCredentialChange) -> ScramCredential:
    return ScramCredential.decoded(dataclasses.asdict(record))


class ClusterCredentialStore:
    def __init__(self, node: NodeView) -> None:
        self._node = node

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        record = self._node.meta.scram.get(user, {}).get(mechanism)
        return None if record is None else _credential(record)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: {mech: _credential(rec) for mech, rec in mechs.items()}
                for user, mechs in self._node.meta.scram.items()}

    async def apply(self, changes: Sequence[CredentialChange]) -> None:
        records: list[r.Record] = [
            r.ScramCredentialChange(c.user, c.mechanism, remove=True) if c.credential is None else
            r.ScramCredentialChange(c.user, c.mechanism, **c.credential.encoded())
            for c in changes
        ]
        if records:
            await _propose(self._node, records, "SCRAM credential change")


def _binding(record: r.AclChange) -> AclBinding:
    return AclBinding(ResourceType(record.resource_type), record.resource_name, PatternType(record.pattern_type),
                      record.principal, record.host, Operation(record.operation), Permission(record.permission))


def _record(binding: AclBinding, remove: bool) -> r.AclChange:
    return r.AclChange(int(binding.resource_type), binding.resource_name, int(binding.pattern_type),
                       binding.principal, binding.host, int(binding.operation), int(binding.permission), remove)


class ClusterAclStore:
    def __init__(self, node: NodeView) -> None:
        self._node = node
        # The authorizer reads every ACL on each request: converted once per change of the metadata's tuple.
        self._source: tuple[r.AclChange, ...] | None = None
        self._bindings: tuple[AclBinding, ...] = ()

    def all(self) -> Sequence[AclBinding]:
        current = self._node.meta.acls
        if current is not self._source:
            self._bindings = tuple(_binding(record) for record in current)
            self._source = current
        return self._bindings

    async def add(self, bindings: Sequence[AclBinding]) -> None:
        new = [b for b in dict.fromkeys(bindings) if b not in self.all()]
        if new:
            await _propose(self._node, [_record(b, remove=False) for b in new], "ACL creation")

    async def remove(self, acl_filter: AclFilter) -> list[AclBinding]:
        """The bindings this broker's metadata has that the filter matches (Kafka's controller matches on its
        own, possibly newer, image: a binding created through another broker a moment ago may be missed)."""
        removed = [acl for acl in self.all() if acl_filter.matches(acl)]
        if removed:
            await _propose(self._node, [_record(b, remove=True) for b in removed], "ACL deletion")
        return removed
