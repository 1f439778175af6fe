"""The metadata store: changefeed definitions, states, checkpoints, errors and ownership leases.

One SQLAlchemy database (SQLite under --data-dir by default; any SQLAlchemy URL) shared by every
server. Ownership is a lease row field: a server owns a changefeed while `owner` is its id and
`lease_expires` is in the future; taking one over is a single conditional UPDATE, so two servers
can never both win. Every write a runner makes (checkpoint, error) is fenced by `owner = me`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Column,
    Double,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    create_engine,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from changefeed.checkpoint import checkpoint_from_json, checkpoint_to_json
from changefeed.errors import StoreError
from changefeed.lifecycle.state import State
from changefeed.model import Checkpoint

_metadata = MetaData()
changefeeds = Table(
    "changefeeds", _metadata,
    Column("id", String(128), primary_key=True),
    Column("source", Text, nullable=False),
    Column("sink_uri", Text, nullable=False),
    Column("config", Text, nullable=False, default=""),
    Column("target_ts", Integer, nullable=True),
    Column("state", String(16), nullable=False),
    Column("epoch", Integer, nullable=False, default=0),  # bumped by every operator change
    Column("checkpoint", Text, nullable=True),
    Column("checkpoint_at", Double, nullable=True),
    Column("stats", Text, nullable=False, default="{}"),
    Column("error", Text, nullable=True),
    Column("error_at", Double, nullable=True),
    Column("first_error_at", Double, nullable=True),
    Column("retry_count", Integer, nullable=False, default=0),
    Column("next_retry", Double, nullable=True),
    Column("owner", String(128), nullable=True),
    Column("lease_expires", Double, nullable=True),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
)


@dataclass(frozen=True)
class ChangefeedRecord:
    id: str
    source: str
    sink_uri: str
    config: str
    target_ts: int | None
    state: State
    epoch: int
    checkpoint: Checkpoint | None
    checkpoint_at: float | None
    stats: dict[str, Any]
    error: str | None
    error_at: float | None
    first_error_at: float | None
    retry_count: int
    next_retry: float | None
    owner: str | None
    lease_expires: float | None
    created_at: float
    updated_at: float


def _record(row: Any) -> ChangefeedRecord:
    m = row._mapping
    return ChangefeedRecord(
        m["id"], m["source"], m["sink_uri"], m["config"], m["target_ts"], State(m["state"]), m["epoch"],
        checkpoint_from_json(m["checkpoint"]) if m["checkpoint"] else None, m["checkpoint_at"],
        json.loads(m["stats"] or "{}"), m["error"], m["error_at"], m["first_error_at"], m["retry_count"],
        m["next_retry"], m["owner"], m["lease_expires"], m["created_at"], m["updated_at"],
    )


class AlreadyExists(StoreError):
    """A changefeed with this id exists."""


class MetadataStore:
    def __init__(self, url: str) -> None:
        try:
            connect_args = {"timeout": 30} if url.startswith("sqlite") else {}
            self.engine: Engine = create_engine(url, connect_args=connect_args)
            _metadata.create_all(self.engine)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the metadata database {url}: {exc}") from exc

    def _write(self, statement: Any, what: str) -> int:
        try:
            with self.engine.begin() as conn:
                return int(conn.execute(statement).rowcount)
        except SQLAlchemyError as exc:
            raise StoreError(f"{what}: {exc}") from exc

    def create(self, cf_id: str, source: str, sink_uri: str, config: str, checkpoint: Checkpoint,
               target_ts: int | None) -> None:
        now = time.time()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(changefeeds).values(
                    id=cf_id, source=source, sink_uri=sink_uri, config=config, target_ts=target_ts,
                    state=State.NORMAL.value, epoch=0, checkpoint=checkpoint_to_json(checkpoint),
                    checkpoint_at=now, stats="{}", retry_count=0, created_at=now, updated_at=now))
        except IntegrityError as exc:
            raise AlreadyExists(f"changefeed {cf_id!r} already exists") from exc
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot create changefeed {cf_id!r}: {exc}") from exc

    def get(self, cf_id: str) -> ChangefeedRecord | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(changefeeds).where(changefeeds.c.id == cf_id)).first()
        return None if row is None else _record(row)

    def all(self) -> list[ChangefeedRecord]:
        with self.engine.connect() as conn:
            return [_record(r) for r in conn.execute(select(changefeeds).order_by(changefeeds.c.id))]

    def remove(self, cf_id: str) -> bool:
        return self._write(delete(changefeeds).where(changefeeds.c.id == cf_id), f"removing {cf_id}") == 1

    def operator_set(self, cf_id: str, *, only_from: tuple[State, ...] | None = None, restart: bool = True,
                     **values: Any) -> bool:
        """An operator's change. `restart` (resume, update) bumps the epoch so an owner drops any runner
        it still has and starts from the stored definition and checkpoint; pause does not, so the
        runner's last acknowledged checkpoint is still saved as it stops. Returns False when the
        changefeed is missing or not in `only_from`."""
        condition = changefeeds.c.id == cf_id
        if only_from is not None:
            condition = and_(condition, changefeeds.c.state.in_([s.value for s in only_from]))
        for key in ("checkpoint",):
            if isinstance(values.get(key), Checkpoint):
                values[key] = checkpoint_to_json(values[key])
        if isinstance(values.get("state"), State):
            values["state"] = values["state"].value
        if restart:
            values["epoch"] = changefeeds.c.epoch + 1
        statement = update(changefeeds).where(condition).values(updated_at=time.time(), **values)
        return self._write(statement, f"updating {cf_id}") == 1

    # --- owner side: every write fenced by the lease -------------------------------------------

    def acquire(self, cf_id: str, owner: str, ttl: float) -> bool:
        now = time.time()
        statement = update(changefeeds).where(and_(
            changefeeds.c.id == cf_id,
            or_(changefeeds.c.owner.is_(None), changefeeds.c.owner == owner, changefeeds.c.lease_expires < now),
        )).values(owner=owner, lease_expires=now + ttl)
        return self._write(statement, f"taking the lease of {cf_id}") == 1

    def release(self, cf_id: str, owner: str) -> None:
        self._write(update(changefeeds).where(and_(changefeeds.c.id == cf_id, changefeeds.c.owner == owner))
                    .values(owner=None, lease_expires=None), f"releasing {cf_id}")

    def owner_set(self, cf_id: str, owner: str, epoch: int, **values: Any) -> bool:
        """A runner's write (checkpoint, stats, state, error); refused once the lease or epoch moved on."""
        if isinstance(values.get("checkpoint"), Checkpoint):
            values["checkpoint"] = checkpoint_to_json(values["checkpoint"])
        if isinstance(values.get("stats"), dict):
            values["stats"] = json.dumps(values["stats"])
        if isinstance(values.get("state"), State):
            values["state"] = values["state"].value
        statement = update(changefeeds).where(and_(
            changefeeds.c.id == cf_id, changefeeds.c.owner == owner, changefeeds.c.epoch == epoch,
        )).values(updated_at=time.time(), **values)
        return self._write(statement, f"saving the progress of {cf_id}") == 1

    def close(self) -> None:
        self.engine.dispose()
