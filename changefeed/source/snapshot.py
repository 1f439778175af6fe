"""Consistent initial snapshot: read existing rows in primary-key chunks inside one
consistent-snapshot transaction whose binlog position is known, so streaming from exactly that
position afterwards neither misses nor repeats a change.

Each table's rows follow a CREATE TABLE event with the table's `SHOW CREATE TABLE` text, as Debezium's snapshot
emits a schema change per table: a consumer learns every captured table, also one that is empty when the
snapshot reads it, which sends no row (the Spark pipeline creates its Delta table from it; a consumer applying
DDL treats it as CREATE TABLE IF NOT EXISTS, which it is: the table exists). It is read just before the table's
rows, not under the lock (SHOW CREATE TABLE waits behind a LOCK TABLES ... WRITE, which would hold up every
table's rows): when its columns are not the ones read under the lock, a DDL ran in between, and the snapshot
starts over. The event passes the changefeed's DDL event filters like any CREATE TABLE.

The position, the list of tables and every table's schema are read under a short FLUSH TABLES WITH READ
LOCK (needs RELOAD), released before the rows are read, as Debezium's `snapshot.locking.mode=minimal` does:
information_schema is not versioned like rows are, so a DDL committed after the snapshot's position but
before its schemas were read would give the snapshot, and every binlog change between that position and
the DDL, a schema the rows do not have (columns shifted; a table renamed away skipped). MariaDB also
exposes the position of a consistent snapshot (`binlog_snapshot_file` / `binlog_snapshot_position`); we
read it there to be exact, so there the lock is only for the schemas: without RELOAD, or when the lock
waits more than GLOBAL_LOCK_WAIT_S behind a long query or a LOCK TABLES (a waiting FLUSH holds up every
new write), the snapshot goes on without it and logs a warning that a DDL during its first moments is not
safe.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from changefeed.errors import ServerConfigError, SnapshotRetryError
from changefeed.filter import ChangeFilter
from changefeed.model import (
    Checkpoint,
    Column,
    DDLEvent,
    DDLKind,
    Position,
    RowChange,
    TableName,
    TableSchema,
    TransactionCommit,
)
from changefeed.source.mounter import SnapshotMounter
from changefeed.source.schema_tracker import SchemaTracker
from changefeed.source.server import (
    ConnectionSettings,
    connect,
    gtid_at,
    list_tables,
    mysql_error_code,
    translate_error,
)
from changefeed.source.server_version import binlog_status

log = logging.getLogger(__name__)
# ER_TABLE_DEF_CHANGED: InnoDB cannot read a table created or rebuilt after the read view opened;
# ER_NO_SUCH_TABLE: dropped after it was listed; ER_BAD_FIELD_ERROR: a column of the schema read under the
# lock was dropped or renamed (an instant ALTER) before the table's rows were read. Either way a new
# snapshot sees a settled list.
_TABLE_CHANGED = (1412, 1146, 1054)
GLOBAL_LOCK_WAIT_S = 5
_SHOWN_COLUMN = re.compile(r"^  `((?:[^`]|``)+)` ", re.MULTILINE)


@dataclass(frozen=True)
class SnapshotProgress:
    table: TableName
    rows_read: int
    rows_estimated: int
    done: bool


ProgressCallback = Callable[[SnapshotProgress], None]


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _select_expression(column: Column, key: tuple[str, ...]) -> str:
    """How the snapshot reads a column so that its value equals what a row event carries.

    The server prints FLOAT with 6 significant digits (`1.23457` for the stored 1.2345677614212036) while the
    binlog carries the exact 4-byte value; read as DOUBLE, the snapshot gets that exact value too. Key columns
    stay as they are: the chunked reads compare them with the last key read."""
    if column.data_type == "float" and column.name not in key:
        return f"CAST({_quote(column.name)} AS DOUBLE)"
    return _quote(column.name)


def _snapshot_position(cur: Any, is_mariadb: bool) -> Position:
    """Opens the consistent-snapshot transaction on `cur`; the binlog position it is consistent with."""
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    if is_mariadb:
        cur.execute("SHOW STATUS WHERE Variable_name IN ('binlog_snapshot_file', 'binlog_snapshot_position')")
        status = {str(k).lower(): str(v) for k, v in cur.fetchall()}
        file, pos = status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
        return Position(file, pos, gtid_at(cur, file, pos, True))
    binlog = binlog_status(cur)  # under the global read lock: nothing commits between the two
    if binlog is None:
        raise ServerConfigError("the binlog status is empty: binary logging is off; start with --log-bin")
    return Position(binlog.file, binlog.pos, binlog.executed_gtid_set)


@contextlib.contextmanager
def _global_read_lock(settings: ConnectionSettings, is_mariadb: bool) -> Iterator[None]:
    """FLUSH TABLES WITH READ LOCK on a connection of its own, held for the block. MySQL needs it for the
    position; on MariaDB a missing RELOAD privilege (error 1227) only costs the schema guarantee."""
    lock = connect(settings)
    try:
        with lock.cursor() as lock_cur:
            if is_mariadb:
                # A waiting FLUSH TABLES WITH READ LOCK holds up every new write on the server (behind a long
                # query or a LOCK TABLES): wait a few seconds at most, then go on as without RELOAD.
                lock_cur.execute(f"SET SESSION lock_wait_timeout = {GLOBAL_LOCK_WAIT_S}")
            try:
                lock_cur.execute("FLUSH TABLES WITH READ LOCK")
            except Exception as exc:
                code = mysql_error_code(exc)
                if not (is_mariadb and code in (1227, 1205)):
                    raise
                why = ("the user lacks RELOAD; grant RELOAD" if code == 1227 else
                       f"it waited {GLOBAL_LOCK_WAIT_S} s behind a long query or LOCK TABLES")
                log.warning("snapshot without FLUSH TABLES WITH READ LOCK (%s): a DDL committed while the "
                            "snapshot reads its table schemas is not safe", why)
                yield
                return
            try:
                yield
            finally:
                lock_cur.execute("UNLOCK TABLES")
    finally:
        lock.close()


def snapshot(settings: ConnectionSettings, tracker: SchemaTracker, change_filter: ChangeFilter, *,
             is_mariadb: bool, commit_ts: Callable[[int], int], chunk_size: int = 5000,
             on_progress: ProgressCallback | None = None) -> Iterator[RowChange | DDLEvent | TransactionCommit]:
    """Yield, per captured table, its CREATE TABLE event (unless the DDL event filters drop it) and every row
    as a snapshot INSERT; then a TransactionCommit whose checkpoint is the binlog position the snapshot is
    consistent with.

    An attempt of a snapshot taken again (started over here, or by a process that took over or restarted
    before the first one finished) may have sent rows of a table that is gone by its own position (dropped, or
    renamed: the new name comes with its own CREATE TABLE and rows). Nothing after that position says so, so
    this attempt first sends a `DROP TABLE IF EXISTS` for each such table, and a consumer ends without it, as
    MySQL is. Those tables are the ones the durable schema history has as existing at this position (recorded
    by the earlier attempts' `snapshot_schema`) and that the listing no longer holds. Tables still there need
    nothing: their CREATE TABLE comes again and a consumer replaces the table's earlier rows."""
    conn = connect(settings, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            with _global_read_lock(settings, is_mariadb):
                position = _snapshot_position(cur, is_mariadb)
                cur.execute("SELECT UNIX_TIMESTAMP()")
                ts = commit_ts(int(cur.fetchone()[0]))
                schemas = [schema for table in list_tables(cur) if change_filter.keeps_table(table)
                           if (schema := tracker.snapshot_schema(table, position)) is not None]
            log.info("snapshot consistent with binlog %s: %d table(s)", position, len(schemas))
            now = {schema.name for schema in schemas}
            for gone in sorted(tracker.tables_at(position) - now, key=str):
                if not change_filter.keeps_table(gone):
                    continue  # not captured (any more): nothing of it was sent under this filter
                tracker.gone(gone, position)
                drop = _drop_table(gone, ts, position)
                if change_filter.keeps_ddl(drop):
                    log.info("snapshot taken again: %s, listed by an earlier attempt, is gone", gone)
                    yield drop
            total = 0
            for schema in schemas:
                create = _create_table(cur, schema, ts, position)
                if change_filter.keeps_ddl(create):
                    yield create
                for change in _read_table(cur, schema, ts, position, chunk_size, on_progress):
                    total += 1
                    yield change
            conn.rollback()
    except Exception as exc:
        if mysql_error_code(exc) in _TABLE_CHANGED:
            raise SnapshotRetryError(f"taking the snapshot: a table changed under it ({exc.args[-1]})") from exc
        translated = translate_error(exc, "taking the snapshot")
        if translated is None or translated is exc:
            raise
        raise translated from exc
    finally:
        conn.close()
    yield TransactionCommit(Checkpoint(position, ts), total)


def _drop_table(name: TableName, ts: int, position: Position) -> DDLEvent:
    sql = f"DROP TABLE IF EXISTS {_quote(name.schema)}.{_quote(name.table)}"
    return DDLEvent(sql, DDLKind.DROP_TABLE, name.schema, (name,), ts, position)


def _create_table(cur: Any, schema: TableSchema, ts: int, position: Position) -> DDLEvent:
    cur.execute(f"SHOW CREATE TABLE {_quote(schema.schema)}.{_quote(schema.table)}")
    sql = str(cur.fetchone()[1])
    # The server writes one column per line, "  `name` type ...", before the keys (also MySQL 8).
    shown = tuple(name.replace("``", "`") for name in _SHOWN_COLUMN.findall(sql))
    if shown != schema.column_names:
        raise SnapshotRetryError(f"taking the snapshot: {schema.name} changed under it (columns {list(shown)}, "
                                 f"read as {list(schema.column_names)} at the snapshot's position)")
    return DDLEvent(sql, DDLKind.CREATE_TABLE, schema.schema, (schema.name,), ts, position, (schema,))


def _read_table(cur: Any, schema: TableSchema, ts: int, position: Position, chunk_size: int,
                on_progress: ProgressCallback | None) -> Iterator[RowChange]:
    mounter = SnapshotMounter(schema)
    columns = ", ".join(_select_expression(c, schema.handle_key) for c in schema.columns)
    source = f"{_quote(schema.schema)}.{_quote(schema.table)}"
    cur.execute("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s",
                (schema.schema, schema.table))
    found = cur.fetchone()
    estimate = int(found[0] or 0) if found else 0
    key = schema.handle_key
    read = 0
    if not key:  # no usable key: one ordered pass (cannot be chunked safely)
        cur.execute(f"SELECT {columns} FROM {source}")
        for row in cur.fetchall():
            yield mounter.mount(row, ts, position, read)
            read += 1
    else:
        key_sql = ", ".join(_quote(k) for k in key)
        key_index = [schema.column_names.index(k) for k in key]
        last: tuple[Any, ...] | None = None
        while True:
            where = f" WHERE ({key_sql}) > ({', '.join(['%s'] * len(key))})" if last is not None else ""
            cur.execute(f"SELECT {columns} FROM {source}{where} ORDER BY {key_sql} LIMIT {int(chunk_size)}",
                        last or ())
            rows = cur.fetchall()
            for row in rows:
                yield mounter.mount(row, ts, position, read)
                read += 1
            if on_progress is not None:
                on_progress(SnapshotProgress(schema.name, read, estimate, False))
            if len(rows) < chunk_size:
                break
            last = tuple(rows[-1][i] for i in key_index)
    log.info("snapshot of %s: %d rows", schema.name, read)
    if on_progress is not None:
        on_progress(SnapshotProgress(schema.name, read, estimate, True))
