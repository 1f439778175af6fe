"""Replication errors, each naming the Kafka error code a handler should answer with."""

from __future__ import annotations


class ReplicationError(Exception):
    retriable: bool = False
    kafka_error: str = "UNKNOWN_SERVER_ERROR"


class NotEnoughReplicas(ReplicationError):
    retriable = True
    kafka_error = "NOT_ENOUGH_REPLICAS"


class NotEnoughReplicasAfterAppend(ReplicationError):
    retriable = True
    kafka_error = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"


class RequestTimedOut(ReplicationError):
    retriable = True
    kafka_error = "REQUEST_TIMED_OUT"


class NotLeaderOrFollower(ReplicationError):
    retriable = True
    kafka_error = "NOT_LEADER_OR_FOLLOWER"


class FencedLeaderEpoch(ReplicationError):
    retriable = True
    kafka_error = "FENCED_LEADER_EPOCH"


class UnknownLeaderEpoch(ReplicationError):
    retriable = True
    kafka_error = "UNKNOWN_LEADER_EPOCH"
