"""The transaction coordinator's state machine against Kafka's rules, with the journal and markers recorded
in memory (the real broker path is tests/broker/test_server_transactions.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from kio.schema.errors import ErrorCode

from broker.coordinator.transactions import TransactionCoordinator
from broker.coordinator.transactions_codec import TxnLogValue, TxnStatus, decode_value, encode_key, encode_value
from broker.coordinator.transactions_topic import apply_batch, encode_batch
from broker.protocol.errors import KafkaApiError

TopicPartition = tuple[str, int]


class Recorder:
    def __init__(self) -> None:
        self.journal: list[tuple[str, TxnLogValue]] = []
        self.markers: list[tuple[int, int, bool, tuple[TopicPartition, ...]]] = []
        self.failing_markers = 0
        self._next_id = 1000

    async def write_state(self, transactional_id: str, value: TxnLogValue) -> None:
        self.journal.append((transactional_id, value))

    async def write_markers(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                            partitions: tuple[TopicPartition, ...]) -> None:
        if self.failing_markers:
            self.failing_markers -= 1
            raise KafkaApiError(ErrorCode.not_leader_or_follower, "leader moved")
        self.markers.append((producer_id, epoch, commit, partitions))

    async def new_producer_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def coordinates(self, transactional_id: str) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def _coordinator() -> tuple[TransactionCoordinator, Recorder, Clock]:
    effects, clock = Recorder(), Clock()
    return TransactionCoordinator(effects, max_timeout_ms=900_000, clock=clock), effects, clock


def _code(coro: Coroutine[Any, Any, Any]) -> ErrorCode:
    with pytest.raises(KafkaApiError) as caught:
        _run(coro)
    return caught.value.code


def test_commit_writes_prepare_then_markers_then_complete() -> None:
    coordinator, effects, _ = _coordinator()
    pid, epoch = _run(coordinator.init_producer_id("tx", 60_000))
    assert epoch == 0
    _run(coordinator.add_partitions("tx", pid, epoch, [("t", 0), ("t", 1)]))
    _run(coordinator.add_partitions("tx", pid, epoch, [("t", 1)]))  # already in: no journal write
    _run(coordinator.end_transaction("tx", pid, epoch, commit=True))
    assert [v.status for _, v in effects.journal] == [TxnStatus.EMPTY, TxnStatus.ONGOING, TxnStatus.PREPARE_COMMIT,
                                                      TxnStatus.COMPLETE_COMMIT]
    assert effects.markers == [(pid, 0, True, (("t", 0), ("t", 1)))]
    _run(coordinator.end_transaction("tx", pid, epoch, commit=True))  # a retry: answered, nothing written
    assert len(effects.journal) == 4
    assert _code(coordinator.end_transaction("tx", pid, epoch, commit=False)) == ErrorCode.invalid_txn_state


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction() -> None:
    coordinator, effects, _ = _coordinator()
    pid, epoch = _run(coordinator.init_producer_id("tx", 60_000))
    _run(coordinator.add_partitions("tx", pid, epoch, [("t", 0)]))
    pid2, epoch2 = _run(coordinator.init_producer_id("tx", 60_000))
    assert (pid2, epoch2) == (pid, 2)  # epoch 1 aborted the open transaction, epoch 2 is the new instance's
    assert effects.markers == [(pid, 1, False, (("t", 0),))]
    assert _code(coordinator.add_partitions("tx", pid, epoch, [("t", 0)])) == ErrorCode.producer_fenced
    assert _code(coordinator.end_transaction("tx", pid, epoch, commit=True)) == ErrorCode.producer_fenced
    assert _code(coordinator.end_transaction("tx", pid + 7, epoch2, commit=True)) == \
        ErrorCode.invalid_producer_id_mapping


def test_timeout_aborts_with_a_bumped_epoch() -> None:
    coordinator, effects, clock = _coordinator()
    pid, epoch = _run(coordinator.init_producer_id("tx", 10_000))
    _run(coordinator.add_partitions("tx", pid, epoch, [("t", 0)]))
    clock.now += 5
    assert _run(coordinator.abort_expired()) == 0
    clock.now += 6
    assert _run(coordinator.abort_expired()) == 1
    assert effects.markers == [(pid, 1, False, (("t", 0),))]
    assert coordinator.get("tx").status == TxnStatus.COMPLETE_ABORT  # type: ignore[union-attr]
    assert _code(coordinator.end_transaction("tx", pid, epoch, commit=True)) == ErrorCode.producer_fenced


def test_markers_that_fail_leave_the_decision_prepared_and_are_retried() -> None:
    coordinator, effects, _ = _coordinator()
    pid, epoch = _run(coordinator.init_producer_id("tx", 60_000))
    _run(coordinator.add_partitions("tx", pid, epoch, [("t", 0)]))
    effects.failing_markers = 1
    _run(coordinator.end_transaction("tx", pid, epoch, commit=True))  # the decision is durable: answered
    assert coordinator.get("tx").status == TxnStatus.PREPARE_COMMIT  # type: ignore[union-attr]
    assert _code(coordinator.add_partitions("tx", pid, epoch, [("t", 0)])) == ErrorCode.concurrent_transactions
    assert _run(coordinator.complete_prepared()) == 1
    assert coordinator.get("tx").status == TxnStatus.COMPLETE_COMMIT  # type: ignore[union-attr]
    assert effects.markers == [(pid, 0, True, (("t", 0),))]


def test_timeout_and_state_checks() -> None:
    coordinator, _, _ = _coordinator()
    assert _code(coordinator.init_producer_id("tx", 900_001)) == ErrorCode.invalid_transaction_timeout
    assert _code(coordinator.end_transaction("nobody", 1, 0, commit=True)) == ErrorCode.invalid_producer_id_mapping
    pid, epoch = _run(coordinator.init_producer_id("tx", 60_000))
    assert _code(coordinator.end_transaction("tx", pid, epoch, commit=True)) == ErrorCode.invalid_txn_state


def test_kip360_retry_of_a_bump_gets_the_same_epoch() -> None:
    coordinator, _, _ = _coordinator()
    pid, epoch = _run(coordinator.init_producer_id("tx", 60_000))
    bumped = _run(coordinator.init_producer_id("tx", 60_000, pid, epoch))
    assert bumped == (pid, 1)
    assert _run(coordinator.init_producer_id("tx", 60_000, pid, epoch)) == bumped  # the response was lost
    assert _code(coordinator.init_producer_id("tx", 60_000, pid + 1, 1)) == ErrorCode.invalid_producer_id_mapping


def test_records_round_trip_and_replay_restores_a_prepared_transaction() -> None:
    value = TxnLogValue(4001, 3, 60_000, TxnStatus.PREPARE_ABORT, (("a", 2), ("a", 0), ("b", 1)), 17, 11)
    decoded = decode_value(encode_value(value))
    assert decoded == TxnLogValue(4001, 3, 60_000, TxnStatus.PREPARE_ABORT, (("a", 0), ("a", 2), ("b", 1)), 17, 11)
    # Kafka's layout: key version 0 + string; value version 0 starts with the producer id.
    assert encode_key("tx") == b"\x00\x00\x00\x02tx"
    assert encode_value(value)[:10] == b"\x00\x00" + (4001).to_bytes(8, "big")
    coordinator, effects, _ = _coordinator()
    assert apply_batch(encode_batch("tx", value, 1), coordinator.load) == 1
    assert _run(coordinator.complete_prepared()) == 1
    assert effects.markers == [(4001, 3, False, (("a", 0), ("a", 2), ("b", 1)))]
    apply_batch(encode_batch("tx", None, 2), coordinator.load)
    assert coordinator.get("tx") is None
