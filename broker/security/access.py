"""Which resources each request touches and what the principal needs on them, after Kafka's KafkaApis
authorization (docs: "Operations and Resources on Protocols").

A rule gets the request before its handler: resources the principal may not touch are taken out of the
request and answered *_AUTHORIZATION_FAILED next to the handler's answers for the rest (per topic, group,
transactional id or config resource, as Kafka answers them); a request that needs the cluster or a
single group is answered whole with the error. Listings (all-topics Metadata, ListGroups) only show what
the principal may describe. Transactions: WRITE on the transactional id for every transactional request,
plus WRITE on the topics added, READ on the group and its topics for offsets; WriteTxnMarkers and the
broker-to-broker AddPartitionsToTxn (v4+) need CLUSTER_ACTION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.handlers._build import NO_THROTTLE, build
from broker.protocol.apis import api_key
from broker.security.acls import Operation
from broker.security.group_access import GROUP_RULES
from broker.security.rule_kinds import CAF, AccessDenied, Caller, Rule, cluster, whole
from broker.security.topic_access import TOPIC_RULES
from broker.security.transaction_access import TRANSACTION_RULES

if TYPE_CHECKING:
    from broker.handlers.context import Request

__all__ = ["RULES", "UNCHECKED", "AccessDenied", "Caller"]


def _cluster_denied(cls: Any, request: Request) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=CAF, error_message=CAF.name, results=(),
                 replica_election_results=(), topics=())


CLUSTER_RULES: dict[int, Rule] = {  # api key -> rule
    api_key("describe_log_dirs"): whole(cluster(Operation.DESCRIBE), _cluster_denied),
    api_key("elect_leaders"): whole(cluster(Operation.ALTER), _cluster_denied),
    api_key("list_partition_reassignments"): whole(cluster(Operation.DESCRIBE), _cluster_denied),
}

RULES: dict[int, Rule] = {**TOPIC_RULES, **GROUP_RULES, **TRANSACTION_RULES, **CLUSTER_RULES}
# Need no ACL (Kafka checks none, or this broker answers them with an error whatever the caller).
UNCHECKED = frozenset(api_key(name) for name in (
    "api_versions", "describe_cluster"))
