"""Access rules of the requests that read, write and administer topics and their configs (Kafka's
KafkaApis: Produce, Fetch, ListOffsets, Metadata, topic and config administration)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.protocol.apis import api_key, response_class
from broker.protocol.legacy_produce import LegacyProduceRequest
from broker.security.acls import Operation
from broker.security.rule_kinds import (
    CAF,
    CONFIG_TOPIC,
    NO_OPERATIONS,
    TAF,
    TOPIC,
    TXN,
    TXN_AF,
    AccessDenied,
    Caller,
    Handler,
    Rule,
    per_item,
    with_body,
)

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

# --- Produce / Fetch / ListOffsets ---------------------------------------------------------------------

def _produce_partitions(cls: Any, partitions: Iterable[Any], code: ErrorCode) -> tuple[Any, ...]:
    return tuple(build(nested(cls, "PartitionProduceResponse"), index=p.index, error_code=code, base_offset=-1,
                       log_append_time=None, log_start_offset=-1, record_errors=(), error_message=None)
                 for p in partitions)


async def _produce(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    if isinstance(body, LegacyProduceRequest):
        return await handler(state, request)  # refused by the handler (UNSUPPORTED_VERSION)
    denied_all = body.transactional_id is not None and not caller.may(Operation.WRITE, TXN, body.transactional_id)

    def allowed(c: Caller, s: BrokerState, topic: Any) -> bool:
        # A produce to a missing topic auto-creates it: that needs CREATE too, as Metadata's auto-creation does.
        return c.may(Operation.WRITE, TOPIC, topic.name) and (
            s.topics.get(topic.name) is not None or create_topic_allowed(c, s, topic))

    def answer(cls: Any, topic: Any, request: Request) -> Any:
        code = TAF if not caller.may(Operation.WRITE, TOPIC, topic.name) else ErrorCode.unknown_topic_or_partition
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
    return await per_item("topic_data", allowed, answer, "responses")(caller, state, request, handler)


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
    return name is None or caller.may(Operation.READ, TOPIC, name)  # unknown ids: the handler answers


_fetch_topics = per_item("topics", _fetch_topic_allowed, _fetch_denied, "responses")


async def _fetch(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    replica = body.replica_state.replica_id if hasattr(body, "replica_state") else getattr(body, "replica_id", -1)
    if replica >= 0 and not caller.may_cluster(Operation.CLUSTER_ACTION):  # a follower's fetch
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, error_code=CAF, session_id=0, responses=())
    return await _fetch_topics(caller, state, request, handler)


_list_offsets = per_item(
    "topics", lambda c, s, t: c.may(Operation.DESCRIBE, TOPIC, t.name),
    lambda cls, t, r: build(nested(cls, "ListOffsetsTopicResponse"), name=t.name, partitions=tuple(
        build(nested(cls, "ListOffsetsPartitionResponse"), partition_index=p.partition_index, error_code=TAF,
              timestamp=-1, offset=-1, leader_epoch=-1, old_style_offsets=()) for p in t.partitions)),
    "topics")


# --- Metadata and topic administration -----------------------------------------------------------------

def _metadata_denied(cls: Any, topic: Any, request: Request) -> Any:
    return build(nested(cls, "MetadataResponseTopic"), error_code=TAF, name=topic.name,
                 topic_id=getattr(topic, "topic_id", None), is_internal=False, partitions=(),
                 topic_authorized_operations=NO_OPERATIONS)


_metadata_named = per_item("topics", lambda c, s, t: t.name is None or c.may(Operation.DESCRIBE, TOPIC, t.name),
                            _metadata_denied, "topics")


async def _metadata(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    if body.topics is None or (request.header.api_version == 0 and not body.topics):
        response = await handler(state, request)
        return dataclasses.replace(response, topics=tuple(
            t for t in response.topics if caller.may(Operation.DESCRIBE, TOPIC, t.name)))
    if getattr(body, "allow_auto_topic_creation", False) and not caller.may_cluster(Operation.CREATE) and any(
            not caller.may(Operation.CREATE, TOPIC, t.name) for t in body.topics if t.name is not None):
        request = with_body(request, allow_auto_topic_creation=False)  # Kafka: CREATE is needed to auto-create
    return await _metadata_named(caller, state, request, handler)


def _describe_topic_partitions_denied(cls: Any, topic: Any, request: Request) -> Any:
    return build(nested(cls, "DescribeTopicPartitionsResponseTopic"), error_code=TAF, name=topic.name,
                 topic_id=uuid.UUID(int=0), is_internal=False, partitions=(),
                 topic_authorized_operations=NO_OPERATIONS)


_describe_topic_partitions_named = per_item(
    "topics", lambda c, s, t: c.may(Operation.DESCRIBE, TOPIC, t.name), _describe_topic_partitions_denied, "topics")


async def _describe_topic_partitions(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    """As Kafka's DescribeTopicPartitionsRequestHandler: every topic asked for that the caller may not DESCRIBE is
    TOPIC_AUTHORIZATION_FAILED (whether it exists or not); with no topic named, only those it may DESCRIBE."""
    body = request.body
    if not body.topics:
        response = await handler(state, request)
        return dataclasses.replace(response, topics=tuple(
            t for t in response.topics if caller.may(Operation.DESCRIBE, TOPIC, t.name)))
    if not any(caller.may(Operation.DESCRIBE, TOPIC, t.name) for t in body.topics):
        # Not through the handler: an empty topic list would ask it for every topic.
        cls = response_class(request.header.api_key, request.header.api_version)
        return build(cls, throttle_time=NO_THROTTLE, next_cursor=None, topics=tuple(
            _describe_topic_partitions_denied(cls, t, request) for t in body.topics))
    return await _describe_topic_partitions_named(caller, state, request, handler)


def _config_allowed(operation: Operation) -> Callable[[Caller, BrokerState, Any], bool]:
    def allowed(caller: Caller, state: BrokerState, resource: Any) -> bool:
        if resource.resource_type == CONFIG_TOPIC:
            return caller.may(operation, TOPIC, resource.resource_name)
        return caller.may_cluster(operation)
    return allowed


def _config_denied(result_name: str) -> Callable[[Any, Any, Request], Any]:
    def answer(cls: Any, resource: Any, request: Request) -> Any:
        code = TAF if resource.resource_type == CONFIG_TOPIC else CAF
        return build(nested(cls, result_name), error_code=code, error_message=code.name,
                     resource_type=resource.resource_type, resource_name=resource.resource_name, configs=())
    return answer


def _delete_topic_name(state: BrokerState, topic: Any) -> str | None:
    if isinstance(topic, str):
        return topic
    return topic.name if topic.name is not None else _fetch_topic_name(state, topic)


def _delete_topic_allowed(caller: Caller, state: BrokerState, topic: Any) -> bool:
    name = _delete_topic_name(state, topic)
    return name is None or caller.may(Operation.DELETE, TOPIC, name)


def _delete_topic_denied(cls: Any, topic: Any, request: Request) -> Any:
    name = topic if isinstance(topic, str) else topic.name
    return build(nested(cls, "DeletableTopicResult"), name=name, topic_id=getattr(topic, "topic_id", None),
                 error_code=TAF, error_message="TOPIC_AUTHORIZATION_FAILED")


async def _delete_topics(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    field = "topics" if hasattr(request.body, "topics") else "topic_names"
    rule = per_item(field, _delete_topic_allowed, _delete_topic_denied, "responses")
    return await rule(caller, state, request, handler)


def create_topic_allowed(caller: Caller, state: BrokerState, topic: Any) -> bool:
    return caller.may_cluster(Operation.CREATE) or caller.may(Operation.CREATE, TOPIC, topic.name)



def _replica_or_topics(caller: Caller, state: BrokerState, topic: Any) -> bool:
    return caller.may(Operation.DESCRIBE, TOPIC, topic.topic)



TOPIC_RULES: dict[int, Rule] = {  # api key -> rule
    api_key("produce"): _produce,
    api_key("fetch"): _fetch,
    api_key("list_offsets"): _list_offsets,
    api_key("metadata"): _metadata,
    api_key("describe_topic_partitions"): _describe_topic_partitions,
    api_key("create_topics"): per_item(
        "topics", create_topic_allowed,
        lambda cls, t, r: build(nested(cls, "CreatableTopicResult"), name=t.name, topic_id=None, error_code=TAF,
                                error_message="TOPIC_AUTHORIZATION_FAILED", topic_config_error_code=0,
                                num_partitions=-1, replication_factor=-1, configs=()), "topics"),
    api_key("delete_topics"): _delete_topics,
    api_key("create_partitions"): per_item(
        "topics", lambda c, s, t: c.may(Operation.ALTER, TOPIC, t.name),
        lambda cls, t, r: build(nested(cls, "CreatePartitionsTopicResult"), name=t.name, error_code=TAF,
                                error_message="TOPIC_AUTHORIZATION_FAILED"), "results"),
    api_key("delete_records"): per_item(
        "topics", lambda c, s, t: c.may(Operation.DELETE, TOPIC, t.name),
        lambda cls, t, r: build(nested(cls, "DeleteRecordsTopicResult"), name=t.name, partitions=tuple(
            build(nested(cls, "DeleteRecordsPartitionResult"), partition_index=p.partition_index, low_watermark=-1,
                  error_code=TAF) for p in t.partitions)), "topics"),
    api_key("offset_for_leader_epoch"): per_item(
        "topics", _replica_or_topics,
        lambda cls, t, r: build(nested(cls, "OffsetForLeaderTopicResult"), topic=t.topic, partitions=tuple(
            build(nested(cls, "EpochEndOffset"), error_code=TAF, partition=p.partition, leader_epoch=-1,
                  end_offset=-1) for p in t.partitions)), "topics"),
    api_key("describe_configs"): per_item("resources", _config_allowed(Operation.DESCRIBE_CONFIGS),
                                           _config_denied("DescribeConfigsResult"), "results"),
    api_key("alter_configs"): per_item("resources", _config_allowed(Operation.ALTER_CONFIGS),
                                        _config_denied("AlterConfigsResourceResponse"), "responses"),
    api_key("incremental_alter_configs"): per_item("resources", _config_allowed(Operation.ALTER_CONFIGS),
                                                    _config_denied("AlterConfigsResourceResponse"), "responses"),
}
