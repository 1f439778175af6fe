"""Real services for tests, benchmarks and examples: MariaDB/MySQL, Spark with Delta, Apache Kafka.

Each service is a context manager that starts the real thing on 127.0.0.1, waits until it answers,
and cleans up after itself. tests/conftest.py wraps them in session-scoped fixtures; bench/ and
examples/ use them directly.
"""

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.kafka_reference import KafkaCluster, KafkaReference, kafka_cluster_reference, kafka_reference
from lakefeed_testing.mysql import MySQLServer, mysql_server
from lakefeed_testing.spark import spark_session

__all__ = [
    "KafkaCluster",
    "KafkaReference",
    "MySQLServer",
    "ServiceError",
    "kafka_cluster_reference",
    "kafka_reference",
    "mysql_server",
    "spark_session",
]
