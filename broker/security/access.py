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

import dataclasses
import datetime
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested, partition_errors
from broker.protocol.apis import api_key, response_class
from broker.protocol.legacy_produce import LegacyProduceRequest
from broker.security.acls import CLUSTER_NAME, Operation, ResourceType
from broker.security.authorizer import Authorizer

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

Handler = Callable[["BrokerState", "Request"], Awaitable[Any]]
TAF, GAF, CAF = (ErrorCode.topic_authorization_failed, ErrorCode.group_authorization_failed,
                 ErrorCode.cluster_authorization_failed)
TXN_AF = ErrorCode.transactional_id_authorization_failed
_TOPIC, _GROUP, _CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
_TXN = ResourceType.TRANSACTIONAL_ID
_NO_OPERATIONS = -2147483648
# Config resource types of Describe/Alter/IncrementalAlterConfigs (Kafka's ConfigResource.Type).
_CONFIG_TOPIC, _CONFIG_BROKER = 2, 4


@dataclass(frozen=True, slots=True)
class Caller:
    authorizer: Authorizer
    principal: str
    host: str

    def may(self, operation: Operation, kind: ResourceType, name: str) -> bool:
        return self.authorizer.allowed(self.principal, self.host, operation, kind, name)

    def may_cluster(self, operation: Operation) -> bool:
        return self.may(operation, _CLUSTER, CLUSTER_NAME)


Rule = Callable[[Caller, "BrokerState", "Request", Handler], Awaitable[Any]]


class AccessDenied(Exception):
    """A request that cannot be answered with an error code (acks=0 Produce): the connection is closed."""


def _with_body(request: Request, **changes: Any) -> Request:
    return dataclasses.replace(request, body=dataclasses.replace(request.body, **changes))


def _per_item(
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
        response = await handler(state, _with_body(request, **{field: kept}))
        if response is None:
            return None
        cls = type(response)
        extra = tuple(answer(cls, item, request) for item in denied)
        return dataclasses.replace(response, **{response_field: (*getattr(response, response_field), *extra)})
    return rule


def _whole(allowed: Callable[[Caller, Request], bool], answer: Callable[[Any, Request], Any]) -> Rule:
    async def rule(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
        if allowed(caller, request):
            return await handler(state, request)
        return answer(response_class(request.header.api_key, request.header.api_version), request)
    return rule


def _filtered(keep: Callable[[Caller, Any, Any], Any]) -> Rule:
    """Run the handler, then let `keep(caller, response, request)` reshape what it may see."""
    async def rule(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
        return keep(caller, await handler(state, request), request)
    return rule


# --- Produce / Fetch / ListOffsets ---------------------------------------------------------------------

def _produce_partitions(cls: Any, partitions: Iterable[Any], code: ErrorCode) -> tuple[Any, ...]:
    return tuple(build(nested(cls, "PartitionProduceResponse"), index=p.index, error_code=code, base_offset=-1,
                       log_append_time=None, log_start_offset=-1, record_errors=(), error_message=None)
                 for p in partitions)


async def _produce(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    if isinstance(body, LegacyProduceRequest):
        return await handler(state, request)  # refused by the handler (UNSUPPORTED_VERSION)
    denied_all = body.transactional_id is not None and not caller.may(Operation.WRITE, _TXN, body.transactional_id)

    def allowed(c: Caller, s: BrokerState, topic: Any) -> bool:
        # A produce to a missing topic auto-creates it: that needs CREATE too, as Metadata's auto-creation does.
        return c.may(Operation.WRITE, _TOPIC, topic.name) and (
            s.topics.get(topic.name) is not None or _create_topic_allowed(c, s, topic))

    def answer(cls: Any, topic: Any, request: Request) -> Any:
        code = TAF if not caller.may(Operation.WRITE, _TOPIC, topic.name) else ErrorCode.unknown_topic_or_partition
        return build(nested(cls, "TopicProduceResponse"), name=topic.name,
                     partition_responses=_produce_partitions(cls, topic.partition_data, code))

    if body.acks == 0 and (denied_all or any(not allowed(caller, state, t) for t in body.topic_data)):
        # acks=0 has no response to carry the error; Kafka closes the connection so the producer notices.
        raise AccessDenied(f"{caller.principal} may not write to every topic of an acks=0 produce request")
    if denied_all:
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, responses=tuple(
            build(nested(cls, "TopicProduceResponse"), name=t.name,
                  partition_responses=_produce_partitions(cls, t.partition_data, TXN_AF)) for t in body.topic_data))
    return await _per_item("topic_data", allowed, answer, "responses")(caller, state, request, handler)


def _fetch_topic_name(state: BrokerState, topic: Any) -> str | None:
    name = getattr(topic, "topic", None)
    if name is None and getattr(topic, "topic_id", None) is not None:
        known = state.topics.by_id(topic.topic_id)
        name = known.name if known is not None else None
    return name


def _fetch_denied(cls: Any, topic: Any, request: Request) -> Any:
    partition_cls = nested(cls, "PartitionData")
    return build(nested(cls, "FetchableTopicResponse"), topic=getattr(topic, "topic", ""),
                 topic_id=getattr(topic, "topic_id", None), partitions=tuple(
                     build(partition_cls, partition_index=p.partition, error_code=TAF, high_watermark=-1,
                           last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                           preferred_read_replica=-1, records=b"") for p in topic.partitions))


def _fetch_topic_allowed(caller: Caller, state: BrokerState, topic: Any) -> bool:
    name = _fetch_topic_name(state, topic)
    return name is None or caller.may(Operation.READ, _TOPIC, name)  # unknown ids: the handler answers


_fetch_topics = _per_item("topics", _fetch_topic_allowed, _fetch_denied, "responses")


async def _fetch(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    replica = body.replica_state.replica_id if hasattr(body, "replica_state") else getattr(body, "replica_id", -1)
    if replica >= 0 and not caller.may_cluster(Operation.CLUSTER_ACTION):  # a follower's fetch
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, error_code=CAF, session_id=0, responses=())
    return await _fetch_topics(caller, state, request, handler)


_list_offsets = _per_item(
    "topics", lambda c, s, t: c.may(Operation.DESCRIBE, _TOPIC, t.name),
    lambda cls, t, r: build(nested(cls, "ListOffsetsTopicResponse"), name=t.name, partitions=tuple(
        build(nested(cls, "ListOffsetsPartitionResponse"), partition_index=p.partition_index, error_code=TAF,
              timestamp=-1, offset=-1, leader_epoch=-1, old_style_offsets=()) for p in t.partitions)),
    "topics")


# --- Metadata and topic administration -----------------------------------------------------------------

def _metadata_denied(cls: Any, topic: Any, request: Request) -> Any:
    return build(nested(cls, "MetadataResponseTopic"), error_code=TAF, name=topic.name,
                 topic_id=getattr(topic, "topic_id", None), is_internal=False, partitions=(),
                 topic_authorized_operations=_NO_OPERATIONS)


_metadata_named = _per_item("topics", lambda c, s, t: t.name is None or c.may(Operation.DESCRIBE, _TOPIC, t.name),
                            _metadata_denied, "topics")


async def _metadata(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    if body.topics is None or (request.header.api_version == 0 and not body.topics):
        response = await handler(state, request)
        return dataclasses.replace(response, topics=tuple(
            t for t in response.topics if caller.may(Operation.DESCRIBE, _TOPIC, t.name)))
    if getattr(body, "allow_auto_topic_creation", False) and not caller.may_cluster(Operation.CREATE) and any(
            not caller.may(Operation.CREATE, _TOPIC, t.name) for t in body.topics if t.name is not None):
        request = _with_body(request, allow_auto_topic_creation=False)  # Kafka: CREATE is needed to auto-create
    return await _metadata_named(caller, state, request, handler)


def _describe_topic_partitions_denied(cls: Any, topic: Any, request: Request) -> Any:
    return build(nested(cls, "DescribeTopicPartitionsResponseTopic"), error_code=TAF, name=topic.name,
                 topic_id=uuid.UUID(int=0), is_internal=False, partitions=(),
                 topic_authorized_operations=_NO_OPERATIONS)


_describe_topic_partitions_named = _per_item(
    "topics", lambda c, s, t: c.may(Operation.DESCRIBE, _TOPIC, t.name), _describe_topic_partitions_denied, "topics")


async def _describe_topic_partitions(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    """As Kafka's DescribeTopicPartitionsRequestHandler: every topic asked for that the caller may not DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED (whether it exists or not); with no topic named, only those it may DESCRIBE."""
    body = request.body
    if not body.topics:
        response = await handler(state, request)
        return dataclasses.replace(response, topics=tuple(
            t for t in response.topics if caller.may(Operation.DESCRIBE, _TOPIC, t.name)))
    if not any(caller.may(Operation.DESCRIBE, _TOPIC, t.name) for t in body.topics):
        # Not through the handler: an empty topic list would ask it for every topic.
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, next_cursor=None, topics=tuple(
            _describe_topic_partitions_denied(cls, t, request) for t in body.topics))
    return await _describe_topic_partitions_named(caller, state, request, handler)


def _config_allowed(operation: Operation) -> Callable[[Caller, BrokerState, Any], bool]:
    def allowed(caller: Caller, state: BrokerState, resource: Any) -> bool:
        if resource.resource_type == _CONFIG_TOPIC:
            return caller.may(operation, _TOPIC, resource.resource_name)
        return caller.may_cluster(operation)
    return allowed


def _config_denied(result_name: str) -> Callable[[Any, Any, Request], Any]:
    def answer(cls: Any, resource: Any, request: Request) -> Any:
        code = TAF if resource.resource_type == _CONFIG_TOPIC else CAF
        return build(nested(cls, result_name), error_code=code, error_message=code.name,
                     resource_type=resource.resource_type, resource_name=resource.resource_name, configs=())
    return answer


def _delete_topic_name(state: BrokerState, topic: Any) -> str | None:
    if isinstance(topic, str):
        return topic
    return topic.name if topic.name is not None else _fetch_topic_name(state, topic)


def _delete_topic_allowed(caller: Caller, state: BrokerState, topic: Any) -> bool:
    name = _delete_topic_name(state, topic)
    return name is None or caller.may(Operation.DELETE, _TOPIC, name)


def _delete_topic_denied(cls: Any, topic: Any, request: Request) -> Any:
    name = topic if isinstance(topic, str) else topic.name
    return build(nested(cls, "DeletableTopicResult"), name=name, topic_id=getattr(topic, "topic_id", None),
                 error_code=TAF, error_message="TOPIC_AUTHORIZATION_FAILED")


async def _delete_topics(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    field = "topics" if hasattr(request.body, "topics") else "topic_names"
    rule = _per_item(field, _delete_topic_allowed, _delete_topic_denied, "responses")
    return await rule(caller, state, request, handler)


def _create_topic_allowed(caller: Caller, state: BrokerState, topic: Any) -> bool:
    return caller.may_cluster(Operation.CREATE) or caller.may(Operation.CREATE, _TOPIC, topic.name)


# --- Groups --------------------------------------------------------------------------------------------

def _group_denied_whole(cls: Any, request: Request) -> Any:
    version = request.header.api_version
    name_nullable = request.header.api_key == api_key("sync_group") or version >= 7
    return build(cls, throttle_time=NO_THROTTLE, error_code=GAF, generation_id=-1, protocol_type=None,
                 protocol_name=None if name_nullable else "", leader="", skip_assignment=False, member_id="",
                 members=(), assignment=b"")


def _group_read(caller: Caller, request: Request) -> bool:
    return caller.may(Operation.READ, _GROUP, request.body.group_id)


async def _offset_commit(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    group_ok = caller.may(Operation.READ, _GROUP, body.group_id)

    def answer(cls: Any, topic: Any, request: Request) -> Any:
        return partition_errors(cls, "OffsetCommit", topic, lambda *_: TAF if group_ok else GAF)

    if not group_ok:
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, topics=tuple(answer(cls, t, request) for t in body.topics))
    rule = _per_item("topics", lambda c, s, t: c.may(Operation.READ, _TOPIC, t.name), answer, "topics")
    return await rule(caller, state, request, handler)


def _offset_delete_topic_denied(cls: Any, topic: Any, request: Request) -> Any:
    return partition_errors(cls, "OffsetDelete", topic, lambda *_: TAF)


_offset_delete_topics = _per_item("topics", lambda c, s, t: c.may(Operation.READ, _TOPIC, t.name),
                                  _offset_delete_topic_denied, "topics")


async def _offset_delete(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    """As Kafka's KafkaApis: DELETE on the group for the whole request, then READ on each topic."""
    if not caller.may(Operation.DELETE, _GROUP, request.body.group_id):
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, error_code=GAF, throttle_time=NO_THROTTLE, topics=())
    return await _offset_delete_topics(caller, state, request, handler)


def _hide_offsets(caller: Caller, topics: Iterable[Any]) -> tuple[Any, ...]:
    """Committed offsets of topics the caller may not describe are answered TOPIC_AUTHORIZATION_FAILED."""
    out = []
    for topic in topics:
        if not caller.may(Operation.DESCRIBE, _TOPIC, topic.name):
            topic = dataclasses.replace(topic, partitions=tuple(
                dataclasses.replace(p, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=TAF)
                for p in topic.partitions))
        out.append(topic)
    return tuple(out)


async def _offset_fetch(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    if hasattr(body, "groups"):  # v8+: several groups
        def answer(cls: Any, group: Any, request: Request) -> Any:
            return build(nested(cls, "OffsetFetchResponseGroup"), group_id=group.group_id, topics=(), error_code=GAF)

        rule = _per_item("groups", lambda c, s, g: c.may(Operation.DESCRIBE, _GROUP, g.group_id), answer, "groups")
        response = await rule(caller, state, request, handler)
        return dataclasses.replace(response, groups=tuple(
            dataclasses.replace(g, topics=_hide_offsets(caller, g.topics)) for g in response.groups))
    if not caller.may(Operation.DESCRIBE, _GROUP, body.group_id):
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, topics=(), error_code=GAF)
    response = await handler(state, request)
    return dataclasses.replace(response, topics=_hide_offsets(caller, response.topics))


def _coordinator_allowed(caller: Caller, key_type: int, key: str) -> bool:
    if key_type == 1:
        return caller.may(Operation.DESCRIBE, _TXN, key)
    return caller.may(Operation.DESCRIBE, _GROUP, key)


async def _find_coordinator(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    key_type = getattr(body, "key_type", 0)
    code = TXN_AF if key_type == 1 else GAF
    if hasattr(body, "coordinator_keys"):
        rule = _per_item(
            "coordinator_keys", lambda c, s, k: _coordinator_allowed(c, key_type, k),
            lambda cls, k, r: build(nested(cls, "Coordinator"), key=k, node_id=-1, host="", port=-1, error_code=code,
                                    error_message=code.name), "coordinators")
        return await rule(caller, state, request, handler)
    if _coordinator_allowed(caller, key_type, body.key):
        return await handler(state, request)
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=code.name, node_id=-1, host="", port=-1)


def _list_groups(caller: Caller, response: Any, request: Request) -> Any:
    if caller.may_cluster(Operation.DESCRIBE):
        return response
    return dataclasses.replace(response, groups=tuple(
        g for g in response.groups if caller.may(Operation.DESCRIBE, _GROUP, g.group_id)))


# --- Producer ids and cluster-wide APIs -----------------------------------------------------------------

def _init_producer_id_allowed(caller: Caller, request: Request) -> bool:
    transactional_id = request.body.transactional_id
    if transactional_id is not None:
        return caller.may(Operation.WRITE, _TXN, transactional_id)
    # Kafka 3+: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    return caller.may_cluster(Operation.IDEMPOTENT_WRITE) or caller.authorizer.allowed_on_any(
        caller.principal, caller.host, Operation.WRITE, _TOPIC)


def _init_producer_id_denied(cls: Any, request: Request) -> Any:
    code = TXN_AF if request.body.transactional_id is not None else CAF
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=-1, producer_epoch=-1)


def _cluster(operation: Operation) -> Callable[[Caller, Request], bool]:
    return lambda caller, request: caller.may_cluster(operation)


def _cluster_denied(cls: Any, request: Request) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=CAF, error_message=CAF.name, results=(),
                 replica_election_results=(), topics=())


def _replica_or_topics(caller: Caller, state: BrokerState, topic: Any) -> bool:
    return caller.may(Operation.DESCRIBE, _TOPIC, topic.topic)


# --- Transactions ------------------------------------------------------------------------------------------

def _txn_write(caller: Caller, request: Request) -> bool:
    return caller.may(Operation.WRITE, _TXN, request.body.transactional_id)


def _txn_denied(cls: Any, request: Request) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=TXN_AF, producer_id=-1, producer_epoch=-1)


def _add_offsets_allowed(caller: Caller, request: Request) -> bool:
    return _txn_write(caller, request) and caller.may(Operation.READ, _GROUP, request.body.group_id)


def _add_offsets_denied(cls: Any, request: Request) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=TXN_AF if not request.body.transactional_id else GAF)


async def _add_partitions(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    if hasattr(body, "transactions"):  # v4+: between brokers (KIP-890)
        if caller.may_cluster(Operation.CLUSTER_ACTION):
            return await handler(state, request)
        return build(cls, throttle_time=NO_THROTTLE, error_code=CAF, results_by_transaction=())
    allowed_txn = caller.may(Operation.WRITE, _TXN, body.v3_and_below_transactional_id)
    denied = {t.name for t in body.v3_and_below_topics if not caller.may(Operation.WRITE, _TOPIC, t.name)}
    if allowed_txn and not denied:
        return await handler(state, request)
    # As Kafka: nothing is added; the denied ones fail with their error, the rest OPERATION_NOT_ATTEMPTED.
    partition_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    return build(cls, throttle_time=NO_THROTTLE, results_by_topic_v3_and_below=tuple(
        build(nested(cls, "AddPartitionsToTxnTopicResult"), name=t.name, results_by_partition=tuple(
            build(partition_cls, partition_index=p, partition_error_code=(
                TXN_AF if not allowed_txn else TAF if t.name in denied else ErrorCode.operation_not_attempted))
            for p in t.partitions))
        for t in body.v3_and_below_topics))


async def _txn_offset_commit(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    code = (TXN_AF if not _txn_write(caller, request) else
            GAF if not caller.may(Operation.READ, _GROUP, body.group_id) else None)
    denied = {t.name for t in body.topics if not caller.may(Operation.READ, _TOPIC, t.name)}
    if code is None and not denied:
        return await handler(state, request)
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(
        partition_errors(cls, "TxnOffsetCommit", t,
                         lambda name, _: code or (TAF if name in denied else ErrorCode.operation_not_attempted))
        for t in body.topics))


def _write_txn_markers_denied(cls: Any, request: Request) -> Any:
    return build(cls, markers=tuple(
        build(nested(cls, "WritableTxnMarkerResult"), producer_id=m.producer_id, topics=tuple(
            build(nested(cls, "WritableTxnMarkerTopicResult"), name=t.name, partitions=tuple(
                build(nested(cls, "WritableTxnMarkerPartitionResult"), partition_index=i, error_code=CAF)
                for i in t.partition_indexes))
            for t in m.topics))
        for m in request.body.markers))


def _list_transactions(caller: Caller, response: Any, request: Request) -> Any:
    return dataclasses.replace(response, transaction_states=tuple(
        t for t in response.transaction_states if caller.may(Operation.DESCRIBE, _TXN, t.transactional_id)))


_EPOCH_START = datetime.datetime.fromtimestamp(0, datetime.UTC)


RULES: dict[int, Rule] = {
    api_key("produce"): _produce,
    api_key("fetch"): _fetch,
    api_key("list_offsets"): _list_offsets,
    api_key("metadata"): _metadata,
    api_key("describe_topic_partitions"): _describe_topic_partitions,
    api_key("create_topics"): _per_item(
        "topics", _create_topic_allowed,
        lambda cls, t, r: build(nested(cls, "CreatableTopicResult"), name=t.name, topic_id=None, error_code=TAF,
                                error_message="TOPIC_AUTHORIZATION_FAILED", topic_config_error_code=0,
                                num_partitions=-1, replication_factor=-1, configs=()), "topics"),
    api_key("delete_topics"): _delete_topics,
    api_key("create_partitions"): _per_item(
        "topics", lambda c, s, t: c.may(Operation.ALTER, _TOPIC, t.name),
        lambda cls, t, r: build(nested(cls, "CreatePartitionsTopicResult"), name=t.name, error_code=TAF,
                                error_message="TOPIC_AUTHORIZATION_FAILED"), "results"),
    api_key("delete_records"): _per_item(
        "topics", lambda c, s, t: c.may(Operation.DELETE, _TOPIC, t.name),
        lambda cls, t, r: build(nested(cls, "DeleteRecordsTopicResult"), name=t.name, partitions=tuple(
            build(nested(cls, "DeleteRecordsPartitionResult"), partition_index=p.partition_index, low_watermark=-1,
                  error_code=TAF) for p in t.partitions)), "topics"),
    api_key("offset_for_leader_epoch"): _per_item(
        "topics", _replica_or_topics,
        lambda cls, t, r: build(nested(cls, "OffsetForLeaderTopicResult"), topic=t.topic, partitions=tuple(
            build(nested(cls, "EpochEndOffset"), error_code=TAF, partition=p.partition, leader_epoch=-1,
                  end_offset=-1) for p in t.partitions)), "topics"),
    api_key("describe_configs"): _per_item("resources", _config_allowed(Operation.DESCRIBE_CONFIGS),
                                           _config_denied("DescribeConfigsResult"), "results"),
    api_key("alter_configs"): _per_item("resources", _config_allowed(Operation.ALTER_CONFIGS),
                                        _config_denied("AlterConfigsResourceResponse"), "responses"),
    api_key("incremental_alter_configs"): _per_item("resources", _config_allowed(Operation.ALTER_CONFIGS),
                                                    _config_denied("AlterConfigsResourceResponse"), "responses"),
    api_key("describe_log_dirs"): _whole(_cluster(Operation.DESCRIBE), _cluster_denied),
    api_key("elect_leaders"): _whole(_cluster(Operation.ALTER), _cluster_denied),
    api_key("list_partition_reassignments"): _whole(_cluster(Operation.DESCRIBE), _cluster_denied),
    api_key("join_group"): _whole(_group_read, _group_denied_whole),
    api_key("sync_group"): _whole(_group_read, _group_denied_whole),
    api_key("heartbeat"): _whole(_group_read, _group_denied_whole),
    api_key("leave_group"): _whole(_group_read, _group_denied_whole),
    api_key("offset_commit"): _offset_commit,
    api_key("offset_fetch"): _offset_fetch,
    api_key("find_coordinator"): _find_coordinator,
    api_key("describe_groups"): _per_item(
        "groups", lambda c, s, g: c.may(Operation.DESCRIBE, _GROUP, g),
        lambda cls, g, r: build(nested(cls, "DescribedGroup"), error_code=GAF, group_id=g, group_state="",
                                protocol_type="", protocol_data="", members=(),
                                authorized_operations=_NO_OPERATIONS), "groups"),
    api_key("delete_groups"): _per_item(
        "groups_names", lambda c, s, g: c.may(Operation.DELETE, _GROUP, g),
        lambda cls, g, r: build(nested(cls, "DeletableGroupResult"), group_id=g, error_code=GAF), "results"),
    api_key("offset_delete"): _offset_delete,
    api_key("list_groups"): _filtered(_list_groups),
    api_key("init_producer_id"): _whole(_init_producer_id_allowed, _init_producer_id_denied),
    api_key("end_txn"): _whole(_txn_write, _txn_denied),
    api_key("add_offsets_to_txn"): _whole(_add_offsets_allowed, _add_offsets_denied),
    api_key("add_partitions_to_txn"): _add_partitions,
    api_key("txn_offset_commit"): _txn_offset_commit,
    api_key("write_txn_markers"): _whole(_cluster(Operation.CLUSTER_ACTION), _write_txn_markers_denied),
    api_key("describe_transactions"): _per_item(
        "transactional_ids", lambda c, s, t: c.may(Operation.DESCRIBE, _TXN, t),
        lambda cls, t, r: build(nested(cls, "TransactionState"), error_code=TXN_AF, transactional_id=t,
                                transaction_state="", transaction_timeout=datetime.timedelta(0),
                                transaction_start_time=_EPOCH_START, producer_id=-1, producer_epoch=-1, topics=()),
        "transaction_states"),
    api_key("list_transactions"): _filtered(_list_transactions),
}
# Need no ACL (Kafka checks none, or this broker answers them with an error whatever the caller).
UNCHECKED = frozenset(api_key(name) for name in (
    "api_versions", "describe_cluster"))
