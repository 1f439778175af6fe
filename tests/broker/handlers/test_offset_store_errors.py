"""OffsetCommit and TxnOffsetCommit answer a failed store of the offsets with the code Kafka's
GroupMetadataManager.storeOffsets gives the client (the coordinator's partition led elsewhere -> NOT_COORDINATOR,
not enough replicas or no answer in time -> COORDINATOR_NOT_AVAILABLE, too large -> INVALID_COMMIT_OFFSET_SIZE),
instead of an exception that closed the client's connection (TxnOffsetCommit did, before)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.txn_offset_commit.v3.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)  # fmt: skip
from kio.static.primitive import i16, i32, i64

from broker.config import BrokerConfig
from broker.core.state import BrokerState
from broker.handlers import txn_offset_commit
from broker.handlers._offset_store_errors import store_error_code
from broker.protocol.errors import KafkaApiError
from broker.protocol.framing import RequestHeader, RequestReceived
from broker.replication.errors import NotEnoughReplicas, NotLeaderOrFollower, ReplicationError
from broker.server import build_state
from broker.storage.store import DiskLogStore


@pytest.mark.parametrize(("failure", "code"), [
    (NotLeaderOrFollower("moved"), ErrorCode.not_coordinator),
    (NotEnoughReplicas("1 of 3 in sync"), ErrorCode.coordinator_not_available),
    (TimeoutError(), ErrorCode.coordinator_not_available),
    (OSError("disk"), ErrorCode.not_coordinator),
    (KafkaApiError(ErrorCode.message_too_large, "big"), ErrorCode.invalid_commit_offset_size),
    (KafkaApiError(ErrorCode.not_enough_replicas_after_append, "late"), ErrorCode.coordinator_not_available),
])  # fmt: skip
def test_kafkas_mapping_of_store_failures(failure: BaseException, code: ErrorCode) -> None:
    assert store_error_code(failure) == code


def _commit(state: BrokerState) -> ErrorCode:
    body = TxnOffsetCommitRequest(
        transactional_id="tx", group_id="g", producer_id=i64(5), producer_epoch=i16(0),  # type: ignore[arg-type]
        topics=(TxnOffsetCommitRequestTopic(name="t", partitions=(TxnOffsetCommitRequestPartition(  # type: ignore[arg-type]
            partition_index=i32(0), committed_offset=i64(7), committed_metadata=None),)),))
    response = asyncio.run(txn_offset_commit.handle(state, RequestReceived(RequestHeader(28, 3, 1, "c"), body, 0)))  # type: ignore[arg-type]
    return ErrorCode(response.topics[0].partitions[0].error_code)


@pytest.mark.parametrize(("failure", "code"), [
    (NotLeaderOrFollower("the offsets partition moved"), ErrorCode.not_coordinator),
    (NotEnoughReplicas("1 of 3 in sync"), ErrorCode.coordinator_not_available),
])  # fmt: skip
def test_txn_offset_commit_answers_a_failed_isr_wait(tmp_path: Path, failure: ReplicationError,
                                                     code: ErrorCode) -> None:
    state = build_state(BrokerConfig().with_overrides({"log.dirs": str(tmp_path)}), DiskLogStore(tmp_path))
    state.create_topic("t", 1, {})
    assert _commit(state) == ErrorCode.none

    def fails(*_: object) -> Awaitable[None]:
        raise failure

    state.role.wait_for_isr = fails  # type: ignore[method-assign]
    assert _commit(state) == code
