"""canal-JSON as TiCDC emits it (pingcap/docs ticdc-canal-json.md), for MySQL row changes and DDL.

Field order and meaning: id (0), database, table, pkNames (null without a primary key), isDdl, type,
es (commit time, ms), ts (encode time, ms), sql ("" for DML), sqlType, mysqlType, data (one row; the
old row for DELETE), old (UPDATE only: the whole previous row), and `_tidb` with
enable-tidb-extension. Message key (a Lakefeed extension): the row's key columns as JSON, so topics
can be compacted and consumers can partition by key.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from changefeed.codec.base import Encoded
from changefeed.codec.values import java_sql_type, mysql_type, value_text
from changefeed.model import Column, DDLEvent, DDLKind, Row, RowChange, RowKind, TableSchema, tso_physical_ms

DDL_TYPES = {
    DDLKind.CREATE_TABLE: "CREATE",
    DDLKind.ALTER_TABLE: "ALTER",
    DDLKind.DROP_TABLE: "ERASE",
    DDLKind.TRUNCATE_TABLE: "TRUNCATE",
    DDLKind.RENAME_TABLE: "RENAME",
    DDLKind.CREATE_INDEX: "CINDEX",
    DDLKind.DROP_INDEX: "DINDEX",
}


@dataclass(frozen=True)
class CanalJsonOptions:
    enable_tidb_extension: bool = False
    content_compatible: bool = False  # full mysqlType with parameters, as official Canal
    key_by_primary_key: bool = True


def _now_ms() -> int:
    return int(time.time() * 1000)


class CanalJsonEncoder:
    """Implements changefeed.codec.base.Encoder."""

    def __init__(self, options: CanalJsonOptions | None = None, clock: Callable[[], int] = _now_ms) -> None:
        self.options = options or CanalJsonOptions()
        self._clock = clock

    def encode_row(self, change: RowChange) -> Encoded:
        table = change.table
        image = change.row
        message = self._row_message(change, table.columns, _row_text(table, image))
        if change.kind is RowKind.UPDATE and change.before:
            message["old"] = [_row_text(table, change.before)]
        if self.options.enable_tidb_extension:
            message["_tidb"] = {"commitTs": change.commit_ts}
        return Encoded(self.row_key(table, image), orjson.dumps(message))

    def encode_handle_only(self, change: RowChange, claim_check_location: str | None = None) -> Encoded:
        """The row reduced to its key columns, flagged `_tidb.onlyHandleKey` (large-message-handle
        handle-key-only) or pointing at the full message (`_tidb.claimCheckLocation`, claim-check)."""
        table = change.table
        columns = [table.column(name) for name in (table.handle_key or table.column_names)]
        image = change.row
        message = self._row_message(change, columns, {c.name: value_text(c, image.get(c.name)) for c in columns})
        tidb: dict[str, Any] = {"commitTs": change.commit_ts}
        if claim_check_location is None:
            tidb["onlyHandleKey"] = True
        else:
            tidb["claimCheckLocation"] = claim_check_location
        message["_tidb"] = tidb
        return Encoded(self.row_key(table, image), orjson.dumps(message))

    def _row_message(self, change: RowChange, columns: Sequence[Column], data: dict[str, Any]) -> dict[str, Any]:
        """The fields every row message has, in TiCDC's order; `old` stays None unless set after."""
        table = change.table
        image = change.row
        return {
            "id": 0,
            "database": table.schema,
            "table": table.table,
            "pkNames": list(table.primary_key) or None,
            "isDdl": False,
            "type": change.kind.value,
            "es": tso_physical_ms(change.commit_ts),
            "ts": self._clock(),
            "sql": "",
            "sqlType": {c.name: java_sql_type(c, image.get(c.name)) for c in columns},
            "mysqlType": {c.name: mysql_type(c, self.options.content_compatible) for c in columns},
            "data": [data],
            "old": None,
        }

    def row_key(self, table: TableSchema, row: Row) -> bytes | None:
        if not self.options.key_by_primary_key:
            return None
        columns = table.handle_key or table.column_names
        key = {name: value_text(table.column(name), row.get(name)) for name in columns}
        return orjson.dumps({"database": table.schema, "table": table.table, "key": key})

    def encode_ddl(self, event: DDLEvent, table: str) -> Encoded:
        """One message per touched table (`table` may be "" for database-level statements)."""
        message: dict[str, Any] = {
            "id": 0,
            "database": event.database,
            "table": table,
            "pkNames": None,
            "isDdl": True,
            "type": DDL_TYPES.get(event.kind, "QUERY"),
            "es": tso_physical_ms(event.commit_ts),
            "ts": self._clock(),
            "sql": event.sql,
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
        }
        if self.options.enable_tidb_extension:
            message["_tidb"] = {"commitTs": event.commit_ts}
        return Encoded(None, orjson.dumps(message))

    def encode_watermark(self, watermark_ts: int) -> Encoded:
        message = {
            "id": 0,
            "database": "",
            "table": "",
            "pkNames": None,
            "isDdl": False,
            "type": "TIDB_WATERMARK",
            "es": tso_physical_ms(watermark_ts),
            "ts": self._clock(),
            "sql": "",
            "sqlType": None,
            "mysqlType": None,
            "data": None,
            "old": None,
            "_tidb": {"watermarkTs": watermark_ts},
        }
        return Encoded(None, orjson.dumps(message))


def _row_text(table: TableSchema, row: Row | None) -> dict[str, str | None]:
    assert row is not None
    return {c.name: value_text(c, row.get(c.name)) for c in table.columns}


def split_key_changing_update(change: RowChange) -> list[RowChange]:
    """An UPDATE that changes the primary key (or the handle unique key) becomes DELETE + INSERT,
    as TiCDC does unless output-raw-change-event, so consumers keyed by PK see both rows."""
    if change.kind is not RowKind.UPDATE or change.before is None or change.after is None:
        return [change]
    key = change.table.handle_key
    if not key or all(change.before.get(k) == change.after.get(k) for k in key):
        return [change]
    delete = RowChange(
        RowKind.DELETE,
        change.table,
        change.before,
        None,
        change.commit_ts,
        change.position,
        change.ordinal,
        change.snapshot,
    )
    insert = RowChange(
        RowKind.INSERT,
        change.table,
        None,
        change.after,
        change.commit_ts,
        change.position,
        change.ordinal,
        change.snapshot,
    )
    return [delete, insert]
