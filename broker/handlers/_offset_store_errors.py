"""Why an offset commit could not be stored, as the error code a consumer or transactional producer acts on.

Kafka's GroupMetadataManager.storeOffsets maps the append's error for the client: not enough replicas or a
timeout -> COORDINATOR_NOT_AVAILABLE (retry the same coordinator), the coordinator's partition led elsewhere or
its storage failing -> NOT_COORDINATOR (look the coordinator up again), a batch too large ->
INVALID_COMMIT_OFFSET_SIZE. OffsetCommit and TxnOffsetCommit answer alike.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError
from broker.replication.errors import NotLeaderOrFollower, ReplicationError

STORE_ERRORS = (KafkaApiError, OSError, ReplicationError, TimeoutError)

_TOO_LARGE = frozenset({ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.invalid_fetch_size})
_ELSEWHERE = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error})
_RETRY_HERE = frozenset({ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                         ErrorCode.not_enough_replicas_after_append, ErrorCode.request_timed_out})


def store_error_code(exc: BaseException) -> ErrorCode:
    """The code for an exception of STORE_ERRORS raised while appending or replicating offsets."""
    if isinstance(exc, NotLeaderOrFollower):
        return ErrorCode.not_coordinator
    if isinstance(exc, ReplicationError):
        return ErrorCode.coordinator_not_available
    if isinstance(exc, TimeoutError):  # the ISR did not confirm in time (checked first: an OSError in Python)
        return ErrorCode.coordinator_not_available
    if isinstance(exc, OSError):
        return ErrorCode.not_coordinator  # the coordinator's storage failed: Kafka's KAFKA_STORAGE_ERROR case
    if isinstance(exc, KafkaApiError):
        if exc.code in _TOO_LARGE:
            return ErrorCode.invalid_commit_offset_size
        if exc.code in _ELSEWHERE:
            return ErrorCode.not_coordinator
        if exc.code in _RETRY_HERE:
            return ErrorCode.coordinator_not_available
        return exc.code
    return ErrorCode.coordinator_not_available
