"""Metadata (3): brokers, controller, topics with partitions and ids; auto-creates topics."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import _placement
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.topics import Topic, validate_name

_NO_OPERATIONS = -2147483648


def topic_entry(state: BrokerState, cls: Any, topic: Topic) -> Any:
    partition_cls = nested(cls, "MetadataResponsePartition")
    partitions = tuple(
        build(
            partition_cls,
            error_code=ErrorCode.none if view.leader >= 0 else ErrorCode.leader_not_available,
            partition_index=index,
            leader_id=view.leader,
            leader_epoch=view.leader_epoch,
            replica_nodes=view.replicas,
            isr_nodes=view.isr,
            offline_replicas=view.offline,
        )
        for index, view in enumerate(_placement.partitions(state, topic))
    )
    return build(
        nested(cls, "MetadataResponseTopic"),
        error_code=ErrorCode.none,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=partitions,
        topic_authorized_operations=_NO_OPERATIONS,
    )


def _error_entry(cls: Any, name: str | None, code: ErrorCode, topic_id: Any = None) -> Any:
    return build(
        nested(cls, "MetadataResponseTopic"),
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=(),
        topic_authorized_operations=_NO_OPERATIONS,
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    # v0 uses an empty list for "all topics"; v1+ uses null.
    all_topics = body.topics is None or (version == 0 and not body.topics)
    allow_create = getattr(body, "allow_auto_topic_creation", True)
    entries = []
    if all_topics:
        entries = [topic_entry(state, cls, topic) for topic in _placement.known_topics(state)]
    else:
        for wanted in body.topics:
            name = wanted.name
            if name is None and getattr(wanted, "topic_id", None) is not None:
                by_id = state.topics.by_id(wanted.topic_id)
                if by_id is None:
                    entries.append(_error_entry(cls, None, ErrorCode.unknown_topic_id, wanted.topic_id))
                    continue
                name = by_id.name
            try:
                validate_name(name)
            except KafkaApiError as exc:
                entries.append(_error_entry(cls, name, exc.code))
                continue
            assert name is not None
            topic = state.topics.get(name)
            if topic is not None and not state.role.knows_topic(name):
                topic = None  # a local leftover the cluster does not know
            if topic is None and allow_create:
                created = state.auto_create(name)
                if created is True:  # the controller is creating it
                    entries.append(_error_entry(cls, name, ErrorCode.leader_not_available))
                    continue
                topic = created if isinstance(created, Topic) else None
            if topic is None:
                entries.append(_error_entry(cls, name, ErrorCode.unknown_topic_or_partition))
            else:
                entries.append(topic_entry(state, cls, topic))
    brokers = tuple(
        build(nested(cls, "MetadataResponseBroker"), node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in _placement.brokers(state)
    )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=state.config.get("cluster.id"),
        controller_id=_placement.controller_id(state),
        topics=tuple(entries),
        cluster_authorized_operations=_NO_OPERATIONS,
    )
