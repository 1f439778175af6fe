"""The broker's internal topics and which coordinator each one backs (FindCoordinator's key types).

A coordinator of a key is the leader of the key's partition of its topic, as in Kafka: groups in
`__consumer_offsets` (key type 0), transactional ids in `__transaction_state` (key type 1). Both topics are
created on first use with their own partition count and replication factor, whatever
auto.create.topics.enable says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kio.schema.errors import ErrorCode

from broker.coordinator.offsets_topic import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS, partition_for
from broker.coordinator.transactions_topic import TRANSACTIONS_TOPIC, TRANSACTIONS_TOPIC_CONFIGS
from broker.protocol.errors import KafkaApiError

GROUP, TRANSACTION = 0, 1  # FindCoordinator key types


@dataclass(frozen=True)
class InternalTopic:
    name: str
    partitions_key: str  # the broker config giving its partition count
    replication_key: str  # and its replication factor
    configs: Mapping[str, str]

    def partition(self, key: str, partitions: int) -> int:
        """The partition holding `key` (a group or transactional id): Kafka's abs(hashCode) % partitions."""
        return partition_for(key, partitions)


OFFSETS = InternalTopic(OFFSETS_TOPIC, "offsets.topic.num.partitions", "offsets.topic.replication.factor",
                        MappingProxyType(OFFSETS_TOPIC_CONFIGS))
TRANSACTIONS = InternalTopic(TRANSACTIONS_TOPIC, "transaction.state.log.num.partitions",
                             "transaction.state.log.replication.factor", MappingProxyType(TRANSACTIONS_TOPIC_CONFIGS))
BY_NAME: Mapping[str, InternalTopic] = MappingProxyType({t.name: t for t in (OFFSETS, TRANSACTIONS)})
BY_KEY_TYPE: Mapping[int, InternalTopic] = MappingProxyType({GROUP: OFFSETS, TRANSACTION: TRANSACTIONS})


def for_key_type(key_type: int) -> InternalTopic:
    found = BY_KEY_TYPE.get(key_type)
    if found is None:
        raise KafkaApiError(ErrorCode.invalid_request, f"coordinator key type {key_type}: use 0 (group) or 1"
                                                       " (transaction)")
    return found
