"""`spark-pipeline verify`: is each Delta table equal to its MySQL table, and if not, which keys differ?

Per table: the columns (names, order, Spark types) are checked, then both sides are read in key order
and cut into key-range chunks of about `chunk_size` rows: a chunk's MySQL rows and Delta rows are
compared by count and checksum, and only a chunk whose checksums differ is compared row by row, which
narrows it to the keys that are missing from Delta, extra in Delta, duplicated in Delta, or whose
values differ. Values are compared in the canonical forms of verify_values.py.

Chunks follow the key's first column when it is an integer (MySQL and Spark order integers alike);
other keys are one chunk (a string collation orders differently in MySQL and Spark), which holds the
whole table in memory.

On a live system the two sides are read at slightly different moments. `recheck_after` seconds later
the differing chunks are read again, so only differences that outlast the pipeline's lag remain
(TiDB's sync-diff-inspector faces the same problem for replicas and checks at a snapshot instead:
https://docs.pingcap.com/tidb/stable/sync-diff-inspector-overview).
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pymysql
import pymysql.cursors

from spark_pipelines.config import PipelineConfig
from spark_pipelines.errors import SchemaError
from spark_pipelines.verify_values import SourceTable, describe, from_delta, from_mysql, mysql_select, q, spark_select

MAX_LISTED = 1000  # differing keys listed per table; the counts stay exact
Row = tuple[Any, ...]
Key = tuple[Any, ...]
Progress = Callable[[str, int, int], None]  # (table, chunks done, MySQL rows done)


@dataclass(frozen=True)
class RowDifference:
    """One key that differs: `missing` (in MySQL only), `extra` (in Delta only), `duplicate` (more than once
    in Delta) or `changed` (different values in `columns`)."""

    kind: str
    key: Key
    columns: tuple[str, ...] = ()
    mysql: Row | None = None
    delta: Row | None = None


@dataclass(frozen=True)
class TableResult:
    table: str  # database.table in MySQL
    delta: str  # the Delta table's path or name
    columns: tuple[str, ...]  # the compared columns, in MySQL's order
    key: tuple[str, ...]
    mysql_rows: int
    delta_rows: int
    chunks: int
    differing_chunks: int
    schema: tuple[str, ...]  # column names, order and type problems
    counts: tuple[tuple[str, int], ...]  # (kind, keys) over all row differences
    rows: tuple[RowDifference, ...]  # the first MAX_LISTED of them
    seconds: float

    @property
    def equal(self) -> bool:
        return not self.schema and not self.counts

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table, "delta": self.delta, "equal": self.equal, "key": list(self.key),
            "mysql_rows": self.mysql_rows, "delta_rows": self.delta_rows, "chunks": self.chunks,
            "differing_chunks": self.differing_chunks, "schema": list(self.schema), "counts": dict(self.counts),
            "differences": [{"kind": d.kind, "key": [_json(v) for v in d.key], "columns": list(d.columns)}
                            for d in self.rows],
            "seconds": round(self.seconds, 3),
        }


def _json(value: Any) -> Any:
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


@dataclass(frozen=True)
class Chunk:
    """Rows whose first key column lies in [low, high) (None: unbounded); rows in canonical form."""

    low: Any
    high: Any
    mysql: tuple[Row, ...]
    delta: tuple[Row, ...]


def checksum(rows: Iterable[Row]) -> str:
    digest = hashlib.sha256()
    for text in sorted(repr(row) for row in rows):
        digest.update(text.encode())
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass
class _Diff:
    counts: dict[str, int] = field(default_factory=dict)
    listed: list[RowDifference] = field(default_factory=list)

    def add(self, difference: RowDifference) -> None:
        self.counts[difference.kind] = self.counts.get(difference.kind, 0) + 1
        if len(self.listed) < MAX_LISTED:
            self.listed.append(difference)


def diff_rows(mysql: Iterable[Row], delta: Iterable[Row], key_at: tuple[int, ...], names: tuple[str, ...],
              into: _Diff) -> None:
    """Narrow one chunk to its differing keys."""
    def key(row: Row) -> Key:
        return tuple(row[i] for i in key_at)

    expected = {key(row): row for row in mysql}
    seen: dict[Key, Row] = {}
    for row in delta:
        k = key(row)
        if k in seen:
            into.add(RowDifference("duplicate", k, delta=row))
            continue
        seen[k] = row
    for k, row in expected.items():
        got = seen.get(k)
        if got is None:
            into.add(RowDifference("missing", k, mysql=row))
        elif got != row:
            columns = tuple(n for n, a, b in zip(names, row, got, strict=True) if a != b)
            into.add(RowDifference("changed", k, columns, row, got))
    for k, row in seen.items():
        if k not in expected:
            into.add(RowDifference("extra", k, delta=row))


class TableVerifier:
    """Compares one MySQL table with its Delta table."""

    def __init__(self, spark: Any, connect: Callable[[], Any], source: SourceTable, delta: Any, delta_name: str,
                 chunk_size: int) -> None:
        self.spark, self.connect, self.source, self.delta_name = spark, connect, source, delta_name
        self.chunk_size = chunk_size
        self.delta = delta  # live rows as a DataFrame, None when there is no Delta table
        delta_columns = [] if delta is None else [f.name for f in delta.schema.fields]
        self.names = tuple(c.name for c in source.columns if c.name in delta_columns) if delta is not None else \
            tuple(c.name for c in source.columns)
        self.kinds = tuple(source.column(n).kind for n in self.names)
        self.key_at = tuple(self.names.index(k) for k in source.key if k in self.names)
        self.schema = self._schema_problems(delta_columns)
        first = source.column(source.key[0])
        self.ranged = first.kind == "int" and len(self.key_at) == len(source.key)

    def _schema_problems(self, delta_columns: list[str]) -> tuple[str, ...]:
        if self.delta is None:
            return (f"no Delta table at {self.delta_name}",)
        problems = []
        expected = [c.name for c in self.source.columns]
        if delta_columns != expected:
            problems.append(f"columns differ: MySQL ({', '.join(expected)}), Delta ({', '.join(delta_columns)})")
        types = {f.name: f.dataType.simpleString() for f in self.delta.schema.fields}
        for column in self.source.columns:
            if column.name in types and types[column.name] != column.spark_type():
                problems.append(f"column {column.name}: Delta has {types[column.name]}, MySQL {column.column_type} "
                                f"needs {column.spark_type()}")
        missing_key = [k for k in self.source.key if k not in self.names]
        if missing_key:
            problems.append(f"key column(s) {', '.join(missing_key)} missing in Delta: rows cannot be compared")
        return tuple(problems)

    # -- reading

    def _mysql_rows(self, low: Any = None, high: Any = None) -> Iterator[Row]:
        columns = ", ".join(mysql_select(self.source.column(n)) for n in self.names)
        where, args = self._range_sql(low, high)
        order = ", ".join(q(k) for k in self.source.key)
        sql = f"SELECT {columns} FROM {q(self.source.database)}.{q(self.source.table)}{where} ORDER BY {order}"
        with self.connect() as conn, conn.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute("SET time_zone = '+00:00'")  # TIMESTAMP values as UTC wall-clock time
            # The stream waits while Spark reads the same chunk of Delta: keep the server from giving up.
            cur.execute("SET net_write_timeout = 600")
            cur.execute(sql, args)
            for row in cur:
                yield tuple(from_mysql(k, v) for k, v in zip(self.kinds, row, strict=True))

    def _range_sql(self, low: Any, high: Any) -> tuple[str, list[Any]]:
        first = q(self.source.key[0])
        clauses, args = [], []
        if low is not None:
            clauses.append(f"{first} >= %s")
            args.append(low)
        if high is not None:
            clauses.append(f"{first} < %s")
            args.append(high)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def _delta_rows(self, low: Any = None, high: Any = None) -> Iterator[Row]:
        if self.delta is None:
            return
        from pyspark.sql import functions as F

        frame = self.delta.select(*[spark_select(self.source.column(n)) for n in self.names])
        first = F.col(q(self.source.key[0]))
        if low is not None:
            frame = frame.where(first >= low)
        if high is not None:
            frame = frame.where(first < high)
        if self.ranged:
            rows: Iterable[Any] = frame.orderBy(*[q(k) for k in self.source.key]).toLocalIterator()
        else:
            rows = frame.collect()
        for row in rows:
            yield tuple(from_delta(k, v) for k, v in zip(self.kinds, row, strict=True))

    def chunks(self) -> Iterator[Chunk]:
        """Both sides in key order, cut where MySQL's first key column passes a chunk's size."""
        mysql, delta = self._mysql_rows(), _Peek(self._delta_rows())
        if not self.ranged:
            yield Chunk(None, None, tuple(mysql), tuple(delta))
            return
        first = self.key_at[0]
        low: Any = None
        pending: list[Row] = []
        for row in mysql:
            if len(pending) >= self.chunk_size and row[first] != pending[-1][first]:
                high = row[first]
                below = tuple(delta.take_while(lambda r: bool(r[first] < high)))  # noqa: B023 - consumed here
                yield Chunk(low, high, tuple(pending), below)
                low, pending = high, []
            pending.append(row)
        yield Chunk(low, None, tuple(pending), tuple(delta))

    # -- comparing

    def run(self, progress: Progress | None = None, recheck_after: float = 0.0) -> TableResult:
        started = time.monotonic()
        diff = _Diff()
        mysql_rows = delta_rows = chunks = 0
        differing: list[Chunk] = []
        if len(self.key_at) == len(self.source.key):
            for chunk in self.chunks():
                chunks += 1
                mysql_rows += len(chunk.mysql)
                delta_rows += len(chunk.delta)
                if len(chunk.mysql) != len(chunk.delta) or checksum(chunk.mysql) != checksum(chunk.delta):
                    differing.append(chunk)
                if progress is not None:
                    progress(self.source.name, chunks, mysql_rows)
        if differing and recheck_after > 0:
            time.sleep(recheck_after)
            differing = [c for c in (self._reread(c) for c in differing)
                         if len(c.mysql) != len(c.delta) or checksum(c.mysql) != checksum(c.delta)]
        for chunk in differing:
            diff_rows(chunk.mysql, chunk.delta, self.key_at, self.names, diff)
        return TableResult(
            self.source.name, self.delta_name, self.names, self.source.key, mysql_rows, delta_rows, chunks,
            len(differing), self.schema, tuple(sorted(diff.counts.items())), tuple(diff.listed),
            time.monotonic() - started)

    def _reread(self, chunk: Chunk) -> Chunk:
        return Chunk(chunk.low, chunk.high, tuple(self._mysql_rows(chunk.low, chunk.high)),
                     tuple(self._delta_rows(chunk.low, chunk.high)))


class _Peek:
    """An iterator that can hand out its items while a condition holds, keeping the first that fails."""

    def __init__(self, items: Iterator[Row]) -> None:
        self._items = items
        self._head: list[Row] = []

    def __iter__(self) -> Iterator[Row]:
        return itertools.chain(self._head, self._items)

    def take_while(self, keep: Callable[[Row], bool]) -> Iterator[Row]:
        while True:
            if not self._head:
                nxt = next(self._items, None)
                if nxt is None:
                    return
                self._head.append(nxt)
            if not keep(self._head[0]):
                return
            yield self._head.pop()


def delta_table(spark: Any, config: PipelineConfig, database: str, table: str) -> tuple[Any, str]:
    """(the live rows of the Delta table for `database.table`, or None when there is none; its name)."""
    from spark_pipelines.io.delta import exists, live_rows

    name = config.catalog_name(database, table)
    if name is not None:
        if not spark.catalog.tableExists(name.replace("`", "")):
            return None, name
        from spark_pipelines.io.delta import DELETED, INTERNAL

        frame = spark.table(name)
        return frame.where(~frame[DELETED]).drop(*INTERNAL), name
    path = config.table_path(database, table)
    return (live_rows(spark, path) if exists(spark, path) else None), path


def source_tables(cursor: Any, config: PipelineConfig, only: Iterable[str] = ()) -> list[tuple[str, str]]:
    """MySQL's (database, table) pairs the config's tables rules keep (or just `only`, 'db.table' each)."""
    cursor.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
                   "AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') "
                   "ORDER BY TABLE_SCHEMA, TABLE_NAME")
    tables = [(str(d), str(t)) for d, t in cursor.fetchall() if config.tables.keeps(str(d), str(t))]
    wanted = list(only)
    if wanted:
        known = {f"{d}.{t}" for d, t in tables}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise SchemaError(f"--table {unknown[0]}: no such MySQL table among those the config's tables rules "
                              f"keep ({len(known)} tables); name it as database.table")
        tables = [(d, t) for d, t in tables if f"{d}.{t}" in wanted]
    return tables


def mysql_connector(uri: str) -> Callable[[], Any]:
    """A connection factory for `mysql://user:password@host:port[?tls=...]`, the form of
    `changefeed create --source`; ConfigError names what is wrong with the URI."""
    from changefeed.errors import ChangefeedError
    from changefeed.lifecycle.source_uri import parse_source_uri
    from spark_pipelines.errors import ConfigError

    try:
        settings = parse_source_uri(uri)
    except ChangefeedError as exc:
        raise ConfigError(f"--source: {exc}") from exc
    kwargs = {**settings.as_kwargs(), "read_timeout": 600}

    def connect() -> Any:
        return pymysql.connect(**kwargs)

    return connect


def verify_table(spark: Any, connect: Callable[[], Any], config: PipelineConfig, database: str, table: str,
                 chunk_size: int = 10_000, progress: Progress | None = None,
                 recheck_after: float = 0.0) -> TableResult:
    """Compare one MySQL table with its Delta table (the comparator of tests/equality too)."""
    if config.scd_type != 1:
        raise SchemaError("verify compares SCD type 1 tables (target.scd_type: 1); an SCD type 2 table holds "
                          "every version, not MySQL's rows")
    with connect() as conn, conn.cursor() as cur:
        source = describe(cur, database, table)
    frame, name = delta_table(spark, config, database, table)
    return TableVerifier(spark, connect, source, frame, name, chunk_size).run(progress, recheck_after)
