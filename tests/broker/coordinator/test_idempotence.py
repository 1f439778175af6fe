"""Idempotence is checked against the partition log's own producer state (the one store): retries of any of
a producer's last five batches are recognised, truncation and a restart leave the state the remaining log
implies. A real disk log; the rules are Kafka's `ProducerStateEntry` / `ProducerAppendInfo`."""

from __future__ import annotations

from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from broker.coordinator.producers import check
from broker.protocol import records
from broker.protocol.errors import KafkaApiError
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from tests.broker.kio_wire import record_batch

PRODUCER = 7


def _batch(sequence: int) -> bytes:
    return record_batch([f"v{sequence}".encode()], producer_id=PRODUCER, epoch=0, base_sequence=sequence)


def _header(data: bytes) -> records.BatchHeader:
    return next(records.iter_batches(data))


def test_retries_truncation_and_restart_use_the_logs_producer_state(tmp_path: Path) -> None:
    log = DiskPartitionLog(tmp_path / "t-0", StorageConfig())
    for sequence in range(6):
        assert check(log.producers, "t", 0, _header(_batch(sequence))) is None
        log.append(_batch(sequence), leader_epoch=0)
    duplicate = check(log.producers, "t", 0, _header(_batch(1)))  # the oldest of the last five
    assert duplicate is not None and (duplicate.base_offset, duplicate.last_offset) == (1, 1)
    with pytest.raises(KafkaApiError) as refused:  # older than the last five: not a known retry
        check(log.producers, "t", 0, _header(_batch(0)))
    assert refused.value.code == ErrorCode.out_of_order_sequence_number

    log.truncate_to(3)  # a follower dropping a divergent suffix: sequences 3.. are gone
    assert check(log.producers, "t", 0, _header(_batch(3))) is None
    with pytest.raises(KafkaApiError):
        check(log.producers, "t", 0, _header(_batch(5)))

    log.close()
    reopened = DiskPartitionLog(tmp_path / "t-0", StorageConfig())
    retry = check(reopened.producers, "t", 0, _header(_batch(2)))  # the last batch, from the snapshot
    assert retry is not None and retry.last_offset == 2
    reopened.close()
