"""Topic checks at changefeed creation: create missing topics, refuse unsafe settings, find the limit.

Never relies on the broker's `auto.create.topics.enable`: topics are created here with the sink URI's
partition-num and replication-factor, the same way on the bundled broker and on Apache Kafka.
"""

import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # type: ignore[attr-defined]

from sink.errors import SinkError, TopicError
from sink.uri import KafkaSinkConfig

log = logging.getLogger(__name__)

DEFAULT_PARTITIONS = 3
# Room for the record batch header and per-record framing, as TiCDC reserves.
BATCH_OVERHEAD = 1024


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int
    max_message_bytes: int  # effective limit for one message, after overhead
    created: bool
    warnings: tuple[str, ...] = ()


def _admin(config: KafkaSinkConfig) -> AdminClient:
    return AdminClient(config.client_config())


KAFKA_DEFAULT_MESSAGE_MAX_BYTES = 1048588
NO_DESCRIBE_CONFIGS = (
    "broker does not support DescribeConfigs, so min.insync.replicas and max.message.bytes cannot be "
    "read; assuming min.insync.replicas=1 and message.max.bytes={default} (set max-message-bytes to the "
    "broker's limit if it is smaller)"
)


def _describe(admin: AdminClient, resource: ConfigResource, timeout: float, warnings: list[str]) -> dict[str, str]:
    """A resource's configs; {} with a warning when the broker lacks DescribeConfigs (the bundled
    broker does not implement it yet), so the checks fall back to Kafka's defaults."""
    deadline = time.monotonic() + timeout
    while True:
        future = admin.describe_configs([resource], request_timeout=timeout)[resource]
        try:
            entries: dict[str, Any] = future.result(timeout)
            break
        except KafkaException as exc:
            code = exc.args[0].code()
            # A topic created a moment ago may not have reached every broker's metadata yet.
            if code == KafkaError.UNKNOWN_TOPIC_OR_PART and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            if code != KafkaError._UNSUPPORTED_FEATURE:
                raise
        message = NO_DESCRIBE_CONFIGS.format(default=KAFKA_DEFAULT_MESSAGE_MAX_BYTES)
        if message not in warnings:
            warnings.append(message)
        return {}
    return {name: entry.value for name, entry in entries.items()}


def _broker_configs(admin: AdminClient, metadata: Any, timeout: float, warnings: list[str]) -> dict[str, str]:
    broker_id = str(next(iter(metadata.brokers)))
    return _describe(admin, ConfigResource(ConfigResource.Type.BROKER, broker_id), timeout, warnings)


def prepare_topic(config: KafkaSinkConfig, topic: str | None = None, *, timeout: float = 10.0) -> TopicInfo:
    """Make sure `topic` (default: the URI's) is usable; raise TopicError/SinkError saying why not."""
    name = topic or config.topic
    admin = _admin(config)
    metadata = _list_topics(admin, config, timeout)
    warnings: list[str] = []
    try:
        broker = _broker_configs(admin, metadata, timeout, warnings)
        broker_min_isr = int(broker.get("min.insync.replicas", "1"))
        existing = metadata.topics.get(name)
        created = False
        if existing is None or existing.error is not None:
            if not config.auto_create_topic:
                raise TopicError(
                    f"topic {name!r} does not exist and auto-create-topic=false; create it or "
                    "set auto-create-topic=true in the sink URI"
                )
            _check_replication(name, config.replication_factor, broker_min_isr, config)
            partitions = config.partition_num or DEFAULT_PARTITIONS
            _create(admin, name, partitions, config.replication_factor, timeout)
            created = True
            replication = config.replication_factor
        else:
            partitions = len(existing.partitions)
            replication = len(next(iter(existing.partitions.values())).replicas)
            if config.partition_num is not None and config.partition_num > partitions:
                raise TopicError(
                    f"partition-num={config.partition_num} exceeds the {partitions} partitions of "
                    f"topic {name!r}; lower partition-num or add partitions to the topic"
                )
            if config.partition_num is not None and config.partition_num < partitions:
                warnings.append(
                    f"partition-num={config.partition_num} is smaller than the {partitions} "
                    f"partitions of topic {name!r}; only the first {config.partition_num} are used"
                )
        topic_configs = _describe(admin, ConfigResource(ConfigResource.Type.TOPIC, name), timeout, warnings)
        min_isr = int(topic_configs.get("min.insync.replicas", str(broker_min_isr)))
        _check_replication(name, replication, min_isr, config)
        broker_limit = broker.get("message.max.bytes", str(KAFKA_DEFAULT_MESSAGE_MAX_BYTES))
        topic_limit = int(topic_configs.get("max.message.bytes", broker_limit))
        limit = min(config.max_message_bytes, topic_limit - BATCH_OVERHEAD)
        if limit < config.max_message_bytes:
            warnings.append(
                f"max-message-bytes={config.max_message_bytes} is capped to {limit} by topic "
                f"{name!r} max.message.bytes={topic_limit} (minus {BATCH_OVERHEAD} bytes overhead)"
            )
    except KafkaException as exc:
        error = exc.args[0]
        retriable = bool(getattr(error, "retriable", lambda: False)())
        raise TopicError(f"checking topic {name!r} failed: {error}", retriable=retriable) from exc
    for warning in warnings:
        log.warning("%s", warning)
    return TopicInfo(name, partitions, replication, min_isr, limit, created, tuple(warnings))


def _check_replication(name: str, replication: int, min_isr: int, config: KafkaSinkConfig) -> None:
    if config.required_acks == -1 and replication < min_isr:
        raise TopicError(
            f"topic {name!r}: replication-factor {replication} is below min.insync.replicas={min_isr}, so "
            "required-acks=-1 could never be satisfied; raise replication-factor or lower min.insync.replicas"
        )


def _create(admin: AdminClient, name: str, partitions: int, replication: int, timeout: float) -> None:
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=replication)], request_timeout=timeout
    )
    try:
        futures[name].result(timeout)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:  # created concurrently: fine
            return
        if error.code() == KafkaError.INVALID_REPLICATION_FACTOR:
            raise TopicError(
                f"cannot create topic {name!r} with replication-factor {replication}: "
                f"{error.str()}; use at most the number of live brokers"
            ) from exc
        raise
    log.info("created topic %s with %d partitions, replication factor %d", name, partitions, replication)


@dataclass(frozen=True)
class PartitionMetadata:
    """One partition as a Metadata response describes it (Kafka protocol, MetadataResponse
    `partitions`): leader -1 means no leader (offline); `isr` shorter than `replicas` means under-replicated."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    partitions: tuple[PartitionMetadata, ...]
    error: str | None


@dataclass(frozen=True)
class BrokerMetadata:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True)
class ClusterMetadata:
    """What a Metadata request for all topics returns: the live brokers, the controller and every topic."""

    brokers: tuple[BrokerMetadata, ...]
    controller_id: int
    topics: tuple[TopicMetadata, ...]


def _error_text(error: Any) -> str | None:
    return None if error is None else str(error)


def _list_topics(admin: Any, config: KafkaSinkConfig, timeout: float) -> Any:
    """One Metadata request; no broker answering in time is a retriable SinkError saying what to check."""
    try:
        return admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise SinkError(
            f"cannot reach Kafka brokers {config.bootstrap} within {timeout:.0f} s ({exc}); "
            "check the sink URI's host:port and that the brokers are up",
            retriable=True,
        ) from exc


def describe_cluster(config: KafkaSinkConfig, *, timeout: float = 3.0) -> ClusterMetadata:
    """The sink cluster's brokers, topics, partition leaders and ISRs, from one Metadata request
    (librdkafka's `list_topics`, Kafka protocol API key 3). Raises a retriable SinkError when no broker
    answers within `timeout`."""
    metadata = _list_topics(_admin(config), config, timeout)
    brokers = tuple(BrokerMetadata(int(b.id), str(b.host), int(b.port)) for b in sorted(metadata.brokers.values(),
                                                                            key=lambda b: b.id))
    topics = tuple(
        TopicMetadata(name, tuple(
            PartitionMetadata(p.id, p.leader, tuple(p.replicas), tuple(p.isrs), _error_text(p.error))
            for p in sorted(topic.partitions.values(), key=lambda p: p.id)
        ), _error_text(topic.error))
        for name, topic in sorted(metadata.topics.items())
    )
    return ClusterMetadata(brokers, metadata.controller_id, topics)
