"""The controller's error hierarchy; each error names a Kafka error code and whether a retry can help."""

from __future__ import annotations


class ControllerError(Exception):
    """Base of every controller error."""

    retriable: bool = False
    kafka_error: str = "UNKNOWN_SERVER_ERROR"


class InvalidReplicationFactor(ControllerError):
    kafka_error = "INVALID_REPLICATION_FACTOR"


class InvalidPartitions(ControllerError):
    kafka_error = "INVALID_PARTITIONS"


class InvalidReplicaAssignment(ControllerError):
    kafka_error = "INVALID_REPLICA_ASSIGNMENT"


class TopicExists(ControllerError):
    kafka_error = "TOPIC_ALREADY_EXISTS"


class UnknownTopic(ControllerError):
    retriable = True
    kafka_error = "UNKNOWN_TOPIC_OR_PARTITION"


class UnknownBroker(ControllerError):
    kafka_error = "BROKER_NOT_AVAILABLE"


class StaleEpoch(ControllerError):
    """A change carries an older leader epoch than the one the controller holds."""

    kafka_error = "FENCED_LEADER_EPOCH"


class StalePartitionEpoch(ControllerError):
    """An ISR change made against an older state of the partition than the controller holds."""

    kafka_error = "INVALID_UPDATE_VERSION"


class NotController(ControllerError):
    retriable = True
    kafka_error = "NOT_CONTROLLER"


class RaftStorageError(ControllerError):
    """The persisted Raft state cannot be read; the message names the file."""
