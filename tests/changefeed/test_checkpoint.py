"""Acknowledgement ordering and the durable checkpoint store (pure, SQLite)."""

from pathlib import Path

import pytest

from changefeed.checkpoint import AckTracker, CheckpointStore
from changefeed.model import Checkpoint, Position, TransactionCommit


def commit(pos: int) -> TransactionCommit:
    return TransactionCommit(Checkpoint(Position("binlog.000001", pos, f"0-1-{pos}"), pos << 18), 1)


def test_checkpoint_advances_only_over_contiguous_acknowledgements() -> None:
    start = commit(1).checkpoint
    tracker = AckTracker(start)
    a, b, c = commit(10), commit(20), commit(30)
    for x in (a, b, c):
        tracker.issued(x)
    assert tracker.acknowledge(b) == start  # a still outstanding
    assert tracker.acknowledge(a) == b.checkpoint
    assert tracker.pending == 1
    assert tracker.acknowledge(c) == c.checkpoint
    with pytest.raises(KeyError):
        tracker.acknowledge(commit(40))


def test_store_survives_reopen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    store = CheckpointStore(url)
    assert store.load("cf") is None
    store.save("cf", commit(5).checkpoint)
    store.save("cf", commit(7).checkpoint)
    store.close()
    again = CheckpointStore(url)
    loaded = again.load("cf")
    assert loaded == commit(7).checkpoint and loaded is not None and loaded.position.gtid == "0-1-7"
