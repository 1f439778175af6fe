"""Checkpoints: where a changefeed resumes, advanced only over fully acknowledged transactions.

`AckTracker` receives every TransactionCommit in capture order (`issued`) and the acknowledgements
of the sink in any order (`acknowledge`); `checkpoint` is the newest commit such that it and every
earlier one are acknowledged. `CheckpointStore` keeps that checkpoint durably (SQLAlchemy; SQLite by
default). Resuming from it replays at most the unacknowledged transactions: at-least-once, no gap.
"""

from __future__ import annotations

import json
from collections import deque

from sqlalchemy import Column, MetaData, String, Table, Text, create_engine, delete, insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from changefeed.errors import StoreError
from changefeed.model import Checkpoint, Position, TransactionCommit


class AckTracker:
    def __init__(self, start: Checkpoint | None = None) -> None:
        self._pending: deque[tuple[TransactionCommit, bool]] = deque()
        self._checkpoint = start

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self._checkpoint

    @property
    def pending(self) -> int:
        return len(self._pending)

    def issued(self, commit: TransactionCommit) -> None:
        self._pending.append((commit, False))

    def acknowledge(self, commit: TransactionCommit) -> Checkpoint | None:
        """Mark one commit acknowledged; returns the checkpoint (advanced when possible)."""
        for i, (pending, _) in enumerate(self._pending):
            if pending is commit:
                self._pending[i] = (pending, True)
                break
        else:
            raise KeyError(f"acknowledged a commit that was never issued: {commit.checkpoint.position}")
        while self._pending and self._pending[0][1]:
            self._checkpoint = self._pending.popleft()[0].checkpoint
        return self._checkpoint


_metadata = MetaData()
_checkpoints = Table(
    "capture_checkpoints",
    _metadata,
    Column("changefeed", String(128), primary_key=True),
    Column("body", Text, nullable=False),
)


def checkpoint_to_json(checkpoint: Checkpoint) -> str:
    p = checkpoint.position
    return json.dumps({"file": p.file, "pos": p.pos, "gtid": p.gtid, "commit_ts": checkpoint.commit_ts})


def checkpoint_from_json(text: str) -> Checkpoint:
    raw = json.loads(text)
    return Checkpoint(Position(raw["file"], int(raw["pos"]), raw.get("gtid", "")), int(raw["commit_ts"]))


class CheckpointStore:
    def __init__(self, url: str = "sqlite://") -> None:
        try:
            if url in ("sqlite://", "sqlite:///:memory:"):
                # One shared connection: an in-memory SQLite database exists per connection, and a
                # runner saves from its own thread while others read.
                self._engine = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
            else:
                self._engine = create_engine(url)
            _metadata.create_all(self._engine)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the checkpoint store at {url}: {exc}") from exc

    def save(self, changefeed: str, checkpoint: Checkpoint) -> None:
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(_checkpoints).where(_checkpoints.c.changefeed == changefeed))
                body = checkpoint_to_json(checkpoint)
                conn.execute(insert(_checkpoints).values(changefeed=changefeed, body=body))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot save the checkpoint of {changefeed}: {exc}") from exc

    def load(self, changefeed: str) -> Checkpoint | None:
        try:
            with self._engine.connect() as conn:
                body = conn.execute(
                    select(_checkpoints.c.body).where(_checkpoints.c.changefeed == changefeed)
                ).scalar_one_or_none()
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read the checkpoint of {changefeed}: {exc}") from exc
        return None if body is None else checkpoint_from_json(body)

    def close(self) -> None:
        self._engine.dispose()
