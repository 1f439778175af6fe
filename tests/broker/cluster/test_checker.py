"""The cluster tests' checker: a write stored twice fails, except the client's re-send under a bumped producer
epoch (librdkafka issue 4953, clients.py), which is reported; the epochs are read from real segment files."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.protocol.records import iter_batches, patch_batch
from tests.broker.cluster.clients import batches_around, check_exactly_once_in_order, producer_epochs
from tests.broker.storage.batches import record_batch

TOPIC = "t"


def _segment(tmp_path: Path, writes: list[tuple[int, int]]) -> Path:
    """Partition 0 of TOPIC holding one single-record batch per (seq, producer epoch), from offset 0."""
    data = bytearray()
    for offset, (seq, epoch) in enumerate(writes):
        batch = bytearray(record_batch([(b"k", str(seq).encode())], producer_id=9000, producer_epoch=epoch,
                                       base_sequence=offset))
        patch_batch(batch, next(iter_batches(batch)), offset, leader_epoch=1)
        data += batch
    directory = tmp_path / f"{TOPIC}-0"
    directory.mkdir(parents=True)
    (directory / "00000000000000000000.log").write_bytes(data)
    return tmp_path


def _check(tmp_path: Path, writes: list[tuple[int, int]], acked_offsets: dict[int, int]) -> list[str]:
    data_dir = _segment(tmp_path, writes)
    got = {0: [(offset, seq) for offset, (seq, _) in enumerate(writes)]}
    acked = [(0, offset, seq, 0.0, 0.0) for seq, offset in acked_offsets.items()]
    return check_exactly_once_in_order(
        acked, got, epochs=lambda partition, offsets: producer_epochs(data_dir, TOPIC, partition, offsets),
        explain=lambda partition, first, last: str(batches_around(data_dir, TOPIC, partition, first, last)))


def test_a_write_stored_again_under_a_later_producer_epoch_is_reported(tmp_path: Path) -> None:
    reports = _check(tmp_path, [(1, 0), (2, 0), (2, 1), (3, 1)], {1: 0, 2: 2, 3: 3})
    assert reports == ["write 2 stored again by the client's re-send under a bumped producer epoch: "
                       "partition 0 offsets [1, 2], producer epochs [0, 1]"]


def test_a_write_stored_twice_within_one_producer_epoch_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"1 writes appear more than once.*\(2, \[\(0, 1\), \(0, 2\)\]\)"):
        _check(tmp_path, [(1, 0), (2, 0), (2, 0), (3, 0)], {1: 0, 2: 2, 3: 3})


def test_a_write_stored_again_under_an_earlier_epoch_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="appear more than once"):
        _check(tmp_path, [(1, 1), (2, 1), (2, 0)], {1: 0, 2: 2})


def test_without_epochs_every_duplicate_fails_and_a_lost_acknowledged_write_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="appear more than once"):
        check_exactly_once_in_order([], {0: [(0, 1), (1, 1)]})
    with pytest.raises(AssertionError, match="1 acknowledged writes lost or moved"):
        _check(tmp_path, [(1, 0), (2, 0), (2, 1)], {1: 0, 2: 2, 3: 3})


def test_a_re_sent_batch_of_several_writes_keeps_the_order_of_its_acknowledged_copies(tmp_path: Path) -> None:
    """librdkafka re-sends every write of the batch it was not answered for: [1, 2, 3] under epoch 0, then
    [2, 3, 4] under epoch 1; the log reads 1 2 3 2 3 4 and the answered copies 1 2 3 4 are in order."""
    reports = _check(tmp_path, [(1, 0), (2, 0), (3, 0), (2, 1), (3, 1), (4, 1)], {1: 0, 2: 3, 3: 4, 4: 5})
    assert [r.split(":")[0] for r in reports] == ["write 2 stored again by the client's re-send under a bumped "
                                                  "producer epoch", "write 3 stored again by the client's re-send "
                                                  "under a bumped producer epoch"]


def test_writes_out_of_produce_order_fail_with_the_first_inversion(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"out of produce order at 1 places; first: write 3 at offset 1 "
                                             r"\(producer epoch 0\) before write 2 at offset 2.*"
                                             r"'2-2 leader epoch 1 producer 9000/0 seq 2'"):
        _check(tmp_path, [(1, 0), (3, 0), (2, 0), (4, 0)], {1: 0, 3: 1, 2: 2, 4: 3})
    # A re-send does not excuse an inversion among the earlier copies.
    with pytest.raises(AssertionError, match="write 2 at offset 2 stands between the two copies of re-sent write 3"):
        _check(tmp_path / "resent", [(1, 0), (3, 0), (2, 0), (3, 1), (4, 1)], {1: 0, 2: 2, 3: 3, 4: 4})


def test_a_write_acknowledged_without_an_offset_must_be_in_its_partition() -> None:
    """librdkafka's implicit acknowledgement (clients.Ack) names no offset: the write is looked for by value in
    its partition. A checker that looked for offset None failed the stop-47 long run (seed 6: two writes
    acknowledged with offset None reported lost; the run kept no segments to show they were stored)."""
    got = {0: [(0, 1), (1, 2), (2, 3)], 1: [(0, 4)]}
    implicit = [(0, 0, 1, 0.0, 0.0), (0, None, 2, 0.0, 0.0), (0, 2, 3, 0.0, 0.0)]
    assert check_exactly_once_in_order(implicit, got) == []
    with pytest.raises(AssertionError, match=r"1 acknowledged writes lost or moved, e.g. \[\(1, None, 2\)\]"):
        check_exactly_once_in_order([(1, None, 2, 0.0, 0.0)], got)  # stored, but in another partition
    with pytest.raises(AssertionError, match=r"1 acknowledged writes lost or moved, e.g. \[\(0, None, 5\)\]"):
        check_exactly_once_in_order([(0, None, 5, 0.0, 0.0)], got)  # not stored at all
