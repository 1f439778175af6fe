"""Durable schema history: every version of every table, keyed by the binlog position it starts at.

A small SQLAlchemy table (SQLite by default, any SQLAlchemy URL works):

    schema_versions(changefeed, schema_name, table_name, file_index, pos, file, body)

`body` is the TableSchema as JSON, or NULL when the table stops existing at that position.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table, Text, create_engine, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import StaticPool

from changefeed import model
from changefeed.errors import StoreError
from changefeed.model import Position, TableName, TableSchema

_metadata = MetaData()
_versions = Table(
    "schema_versions", _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("changefeed", String(128), nullable=False, index=True),
    Column("schema_name", String(64), nullable=False),
    Column("table_name", String(64), nullable=False),
    Column("file_index", Integer, nullable=False),
    Column("pos", Integer, nullable=False),
    Column("file", String(255), nullable=False),
    Column("body", Text, nullable=True),
)

Version = tuple[tuple[int, int], TableSchema | None]


def schema_to_json(schema: TableSchema) -> str:
    return json.dumps(asdict(schema), separators=(",", ":"))


def schema_from_json(text: str) -> TableSchema:
    raw: dict[str, Any] = json.loads(text)
    columns = tuple(model.Column(**{**c, "elements": tuple(c["elements"])}) for c in raw["columns"])
    return TableSchema(raw["schema"], raw["table"], columns, tuple(raw["primary_key"]),
                       tuple(tuple(k) for k in raw["unique_keys"]))


def _engine(url: str) -> Engine:
    if url in ("sqlite://", "sqlite:///:memory:"):
        # An in-memory SQLite database lives in one connection; SQLAlchemy's default pool gives each
        # thread its own (empty) one, and a changefeed runs its capture in a worker thread.
        return create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    return create_engine(url)


class SchemaStore:
    """Append-only history of table schemas for one changefeed."""

    def __init__(self, url: str = "sqlite://", changefeed: str = "default") -> None:
        self._changefeed = changefeed
        try:
            self._engine = _engine(url)
            _metadata.create_all(self._engine)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the schema history at {url}: {exc}") from exc

    def put(self, table: TableName, at: Position, schema: TableSchema | None) -> None:
        row = {"changefeed": self._changefeed, "schema_name": table.schema, "table_name": table.table,
               "file_index": at.file_index, "pos": at.pos, "file": at.file,
               "body": None if schema is None else schema_to_json(schema)}
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(_versions).values(**row))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot record the schema of {table} at {at}: {exc}") from exc

    def load(self) -> dict[TableName, list[Version]]:
        """All versions per table, oldest first."""
        c = _versions.c
        query = (select(c.schema_name, c.table_name, c.file_index, c.pos, c.body)
                 .where(_versions.c.changefeed == self._changefeed)
                 .order_by(_versions.c.file_index, _versions.c.pos, _versions.c.id))
        history: dict[TableName, list[Version]] = {}
        try:
            with self._engine.connect() as conn:
                for schema_name, table_name, file_index, pos, body in conn.execute(query):
                    history.setdefault(TableName(schema_name, table_name), []).append(
                        ((file_index, pos), None if body is None else schema_from_json(body)))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read the schema history: {exc}") from exc
        return history

    def close(self) -> None:
        self._engine.dispose()
