"""The Kafka sink: confluent-kafka producer and admin checks (the only importers of confluent_kafka)."""

from sink.kafka.admin import TopicInfo, prepare_topic
from sink.kafka.producer import KafkaSink

__all__ = ["KafkaSink", "TopicInfo", "prepare_topic"]
