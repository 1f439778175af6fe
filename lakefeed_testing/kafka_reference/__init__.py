"""The Apache Kafka reference: a real Kafka 4.x broker (KRaft, combined broker+controller) assembled
from Maven Central jars, plus its CLI tools, for compatibility tests and side-by-side benchmarks."""

from lakefeed_testing.kafka_reference.cluster import KafkaCluster, kafka_cluster_reference
from lakefeed_testing.kafka_reference.jars import KAFKA_VERSION, ensure_kafka_libs
from lakefeed_testing.kafka_reference.server import KafkaReference, kafka_reference
from lakefeed_testing.kafka_reference.tools import KAFKA_TOOLS, run_kafka_tool

__all__ = [
    "KAFKA_TOOLS",
    "KAFKA_VERSION",
    "KafkaCluster",
    "KafkaReference",
    "ensure_kafka_libs",
    "kafka_cluster_reference",
    "kafka_reference",
    "run_kafka_tool",
]
