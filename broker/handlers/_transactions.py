"""What the transactional handlers share: the coordinator check and Kafka's error-code compatibility.

PRODUCER_FENCED (KIP-588) is answered as INVALID_PRODUCER_EPOCH to clients older than the request
versions that introduced it, as Kafka does, since those clients do not know the newer code.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.coordinator.internal_topics import TRANSACTION
from broker.handlers.context import BrokerState
from broker.protocol.errors import KafkaApiError


def check_coordinator(state: BrokerState, transactional_id: str) -> None:
    """NOT_COORDINATOR unless this broker leads the id's `__transaction_state` partition (created on first
    use: COORDINATOR_NOT_AVAILABLE while the controller creates it)."""
    state.check_coordinator(transactional_id, TRANSACTION)


def fenced_code(exc: KafkaApiError, api_version: int, fenced_since: int) -> ErrorCode:
    if exc.code == ErrorCode.producer_fenced and api_version < fenced_since:
        return ErrorCode.invalid_producer_epoch
    return exc.code
