"""The schema in force at every binlog position, kept durably in a SchemaStore.

Sources, most trusted first:
1. the TABLE_MAP event before each rows event (names, types, signedness, nullability, primary key,
   enum/set members: always right for the rows that follow it);
2. a stored version whose position is at or before the event (right when replaying history);
3. information_schema, read right after a DDL or when no stored version fits; it describes the
   table *now*, so it is used only when its columns match what the binlog says.

Every new version is appended to the store at the position where it starts, so a replay from an
older checkpoint finds the versions in force back then instead of today's schema.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import replace

from changefeed.ddl_parse import ParsedDDL
from changefeed.model import DDLKind, Position, TableName, TableSchema
from changefeed.source.column_types import column_from_info, fits, info_matches, merge_columns
from changefeed.source.mounter import RowMounter
from changefeed.source.records import BinlogColumn, TableMap
from changefeed.source.schema_store import SchemaStore, Version
from changefeed.source.server import TableInfo

InfoLookup = Callable[[TableName], "TableInfo | None"]


def schema_from_info(info: TableInfo) -> TableSchema:
    columns = tuple(column_from_info(c) for c in info.columns)
    return TableSchema(info.name.schema, info.name.table, columns, info.primary_key, info.unique_keys)


class SchemaTracker:
    def __init__(self, store: SchemaStore, lookup: InfoLookup) -> None:
        self._store = store
        self._lookup = lookup
        self._history: dict[TableName, list[Version]] = store.load()
        self._mounters: dict[int, tuple[tuple[BinlogColumn, ...], RowMounter]] = {}

    def at(self, table: TableName, position: Position) -> TableSchema | None:
        versions = self._history.get(table)
        if not versions:
            return None
        index = bisect.bisect_right(versions, position.sort_key, key=lambda v: v[0])
        return versions[index - 1][1] if index else None

    def _exact(self, table: TableName, position: Position) -> Version | None:
        for version in self._history.get(table, ()):
            if version[0] == position.sort_key:
                return version
        return None

    def _record(self, table: TableName, position: Position, schema: TableSchema | None) -> None:
        self._store.put(table, position, schema)
        versions = self._history.setdefault(table, [])
        bisect.insort_right(versions, (position.sort_key, schema), key=lambda v: v[0])

    def forget_table_ids(self) -> None:
        """Table ids are reassigned after DDL and server restarts (seen as a rotate)."""
        self._mounters.clear()

    def mounter(self, table_map: TableMap) -> RowMounter:
        cached = self._mounters.get(table_map.table_id)
        if cached is not None and cached[0] == table_map.columns:
            return cached[1]
        schema = self._resolve(table_map)
        mounter = RowMounter(schema, table_map.columns)
        self._mounters[table_map.table_id] = (table_map.columns, mounter)
        return mounter

    def _resolve(self, tm: TableMap) -> TableSchema:
        name = TableName(tm.schema, tm.table)
        current = self.at(name, tm.position)
        binlog_primary = tuple(c.name for c in tm.columns if c.primary)
        if current is not None and fits(current.columns, tm.columns):
            if set(current.primary_key) == set(binlog_primary):
                return current
            # The TABLE_MAP's key (binlog_row_metadata=FULL) is the key these rows were written under; a
            # version read from information_schema may have missed it (a DDL raced the read).
            schema = replace(current, primary_key=binlog_primary)
            self._record(name, tm.position, schema)
            return schema
        info = self._lookup(name)
        matched = info is not None and info_matches(tm.columns, info.columns)
        columns = merge_columns(tm.columns, info.columns if info is not None and matched else None)
        # The key is the TABLE_MAP's even when information_schema names one: information_schema describes
        # the table now, and a key added since these rows were written is not theirs.
        unique = info.unique_keys if info is not None and matched else _surviving_keys(current, tm.columns)
        schema = TableSchema(tm.schema, tm.table, columns, binlog_primary, unique)
        self._record(name, tm.position, schema)
        return schema

    def snapshot_schema(self, table: TableName, position: Position) -> TableSchema | None:
        """The schema to read a table with in a snapshot taken at `position`."""
        info = self._lookup(table)
        if info is None:
            return None
        schema = schema_from_info(info)
        if self.at(table, position) != schema:
            self._record(table, position, schema)
        return schema

    def tables_at(self, position: Position) -> set[TableName]:
        """The tables that exist at `position` as far as the history knows."""
        return {table for table in self._history if self.at(table, position) is not None}

    def gone(self, table: TableName, position: Position) -> None:
        """Record that `table` no longer exists at `position` (a snapshot found it gone)."""
        self._record_once(table, position, None)

    def apply_ddl(self, ddl: ParsedDDL, position: Position) -> tuple[TableSchema, ...]:
        """Record the effect of a DDL statement; returns the schemas of surviving touched tables."""
        self.forget_table_ids()
        if ddl.kind is DDLKind.DROP_DATABASE and ddl.database is not None:
            for table, versions in list(self._history.items()):
                if table.schema == ddl.database and versions[-1][1] is not None:
                    self._record_once(table, position, None)
            return ()
        if ddl.kind is DDLKind.DROP_TABLE:
            for table in ddl.tables:
                self._record_once(table, position, None)
            return ()
        if ddl.kind is DDLKind.RENAME_TABLE:
            olds, news = ddl.tables[0::2], ddl.tables[1::2]
            for old in olds:
                if old not in news:
                    self._record_once(old, position, None)
            return tuple(s for t in news if (s := self._refresh(t, position)) is not None)
        if ddl.kind in (DDLKind.CREATE_TABLE, DDLKind.ALTER_TABLE, DDLKind.CREATE_INDEX, DDLKind.DROP_INDEX,
                        DDLKind.TRUNCATE_TABLE):
            return tuple(s for t in ddl.tables if (s := self._refresh(t, position)) is not None)
        return ()

    def _record_once(self, table: TableName, position: Position, schema: TableSchema | None) -> None:
        if self._exact(table, position) is None:
            self._record(table, position, schema)

    def _refresh(self, table: TableName, position: Position) -> TableSchema | None:
        known = self._exact(table, position)
        if known is not None:  # replaying: keep what was recorded the first time
            return known[1]
        info = self._lookup(table)
        if info is None:
            return None
        schema = schema_from_info(info)
        if self.at(table, position) != schema:
            self._record(table, position, schema)
        return schema


def _surviving_keys(
    previous: TableSchema | None, columns: Sequence[BinlogColumn]
) -> tuple[tuple[str, ...], ...]:
    if previous is None:
        return ()
    names = {c.name for c in columns}
    return tuple(k for k in previous.unique_keys if all(n in names for n in k))
