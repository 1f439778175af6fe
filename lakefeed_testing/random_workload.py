"""A seeded random workload for the equality harness: every supported type, every kind of change.

Separate from the demo's sysbench-like workload (examples/workload.py): this one exists to find
differences between MySQL and Delta. Five tables cover every column type the pipeline maps
(spark_pipelines/schemas.py), with single, composite and unique (no primary key) keys. Transactions of
1-5 statements mix INSERT, REPLACE, INSERT ... ON DUPLICATE KEY UPDATE, single-row, ranged and
key-changing UPDATEs and DELETEs, some rolled back, in sessions whose time zone is not UTC. DDL is
interleaved the way people and migration tools write it (qualified names from sessions without a
default database, comments, backquotes, mixed-case keywords, multi-clause ALTER, indexes, defaults and
table options that change no row, gh-ost's copy-and-swap cut-over, a column joining the primary key,
...). Statements also join two tables
(multi-table UPDATE and DELETE), stop at ORDER BY ... LIMIT, skip duplicates (INSERT IGNORE) and roll
back to a savepoint inside a transaction that commits.

Every kind is switchable (`KINDS`), so CI can run a slice and a feature known to be broken can be
excluded with its reason. The script is a pure function of (seed, options): `plan()` returns the
statements, `run()` executes them. A statement MySQL refuses (a duplicate key, say) fails alone, as it
would for an application; the end state is what MySQL holds, so the generator does not model rows.

    python -m lakefeed_testing.random_workload --seed 7 --print          # the SQL, to read or replay
    python -m lakefeed_testing.random_workload --seed 7 --url mysql://root:pw@127.0.0.1:3306 --database eq
"""

from __future__ import annotations

import contextlib
import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import click
import pymysql
from pymysql.converters import escape_string

# DML kinds: what a transaction may contain.
DML_KINDS = ("insert", "replace", "upsert", "update", "range_update", "key_update", "delete", "rollback",
             "insert_ignore", "multi_table", "order_limit", "savepoint")
# DDL kinds: one statement (or a short script) each, between transactions.
DDL_KINDS = ("add_column", "add_column_default", "add_column_after", "modify_type", "drop_column",
             "multi_clause_alter", "rename_column", "rename_table", "truncate", "create_like_select",
             "create_drop", "index", "column_default", "table_option", "cutover", "widen_key")
# How statements are written: each is applied at random when enabled.
STYLE_KINDS = ("qualified", "comments", "backquotes", "mixed_case", "time_zone", "json_escapes")
# Rows inserted before the changefeed starts (the snapshot must bring them), with FLOAT values in them
# (off: NULL); a table whose key is a NOT NULL unique index, not a primary key (off: the same columns
# as its primary key); the changes start while the changefeeds' snapshots still run (off: the harness
# waits for them; read by tests/equality/harness.py).
PHASE_KINDS = ("preload", "preload_float", "no_primary_key", "concurrent_snapshot")
KINDS = DML_KINDS + DDL_KINDS + STYLE_KINDS + PHASE_KINDS

# Session time zones other than UTC (fixed offsets: a private MariaDB has no time zone tables).
TIME_ZONES = ("+05:30", "-08:00", "+09:00", "-03:30", "+00:00")
KEY_SPACE = 240  # ids are drawn from 1..KEY_SPACE so inserts collide and updates find rows


class WorkloadError(ValueError):
    """Bad workload options (an unknown kind, say)."""

    retriable = False


@dataclass(frozen=True)
class Column:
    name: str
    sql_type: str  # as written in CREATE TABLE, e.g. "DECIMAL(12,4)", "ENUM('a','b','c d')"
    nullable: bool = True
    default: str | None = None  # an SQL literal


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]  # the primary key, or the NOT NULL unique key when primary is False
    primary: bool = True
    unique: tuple[str, ...] = ()  # an extra UNIQUE index (a REPLACE may then delete two rows)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name.lower() == name.lower())

    @property
    def non_key(self) -> tuple[Column, ...]:
        keyed = {k.lower() for k in (*self.key, *self.unique)}
        return tuple(c for c in self.columns if c.name.lower() not in keyed)


@dataclass(frozen=True)
class Step:
    """One transaction, or one DDL statement, in one session."""

    kind: str
    statements: tuple[str, ...]
    default_database: bool = True  # False: a session without a default database (qualified names)
    time_zone: str = "+00:00"
    commit: bool = True  # False: ROLLBACK at the end


@dataclass(frozen=True)
class Options:
    seed: int
    database: str = "eq"
    preload_rows: int = 60
    transactions: int = 150
    ddl_statements: int = 14
    kinds: frozenset[str] = frozenset(KINDS)

    def has(self, kind: str) -> bool:
        return kind in self.kinds


def parse_kinds(include: Iterable[str] = (), exclude: Iterable[str] = ()) -> frozenset[str]:
    """`include` (default: every kind) minus `exclude`; unknown names are refused with the list."""
    include, exclude = list(include), list(exclude)
    for kind in (*include, *exclude):
        if kind not in KINDS:
            raise WorkloadError(f"unknown workload kind {kind!r}; known kinds: {', '.join(KINDS)}")
    return frozenset(include or KINDS) - frozenset(exclude)


def initial_tables(unique_key_only: bool = True) -> list[Table]:
    """Five tables that between them hold every type the pipeline maps."""
    return [
        Table("numbers", (
            Column("id", "BIGINT", nullable=False), Column("ti", "TINYINT"), Column("tu", "TINYINT UNSIGNED"),
            Column("si", "SMALLINT"), Column("su", "SMALLINT UNSIGNED"), Column("mi", "MEDIUMINT"),
            Column("mu", "MEDIUMINT UNSIGNED"), Column("i", "INT"), Column("iu", "INT UNSIGNED"),
            Column("bi", "BIGINT"), Column("bu", "BIGINT UNSIGNED"), Column("dec1", "DECIMAL(12,4)"),
            Column("dec2", "DECIMAL(38,10)"), Column("f", "FLOAT"), Column("d", "DOUBLE"),
            Column("b5", "BIT(5)"), Column("b64", "BIT(64)"), Column("y", "YEAR"),
        ), key=("id",)),
        Table("texts", (
            Column("region", "CHAR(4)", nullable=False), Column("id", "INT", nullable=False),
            Column("code", "VARCHAR(24)"), Column("c", "CHAR(10)"), Column("vc", "VARCHAR(40)"),
            Column("tt", "TINYTEXT"), Column("tx", "TEXT"), Column("mt", "MEDIUMTEXT"), Column("lt", "LONGTEXT"),
            Column("e", "ENUM('a','b','c d')"), Column("st", "SET('x','y','z')"), Column("j", "JSON"),
        ), key=("region", "id"), unique=("code",)),
        Table("times", (
            Column("id", "INT", nullable=False), Column("dt", "DATE"), Column("dtm", "DATETIME"),
            Column("dtm6", "DATETIME(6)"), Column("ts", "TIMESTAMP NULL"), Column("ts3", "TIMESTAMP(3) NULL"),
            Column("tm", "TIME"), Column("tm3", "TIME(3)"), Column("n", "INT"),
        ), key=("id",)),
        Table("binaries", (
            Column("id", "INT", nullable=False), Column("bn", "BINARY(8)"), Column("vb", "VARBINARY(32)"),
            Column("tb", "TINYBLOB"), Column("bl", "BLOB"), Column("mb", "MEDIUMBLOB"), Column("lb", "LONGBLOB"),
            Column("f", "FLOAT"), Column("vc", "VARCHAR(20)"),
        ), key=("id",)),
        Table("uniq", (
            Column("id", "INT", nullable=False), Column("tag", "VARCHAR(10)", nullable=False),
            Column("qty", "SMALLINT"), Column("price", "DECIMAL(10,2)"), Column("note", "VARCHAR(30)"),
            Column("f", "FLOAT"),
        ), key=("id", "tag"), primary=not unique_key_only),
    ]


def create_table_sql(table: Table, database: str) -> str:
    columns = [f"`{c.name}` {c.sql_type}{'' if c.nullable else ' NOT NULL'}"
               + ("" if c.default is None else f" DEFAULT {c.default}") for c in table.columns]
    key = ", ".join(f"`{k}`" for k in table.key)
    columns.append(f"PRIMARY KEY ({key})" if table.primary else f"UNIQUE KEY `uk_{table.name}` ({key})")
    if table.unique:
        columns.append(f"UNIQUE KEY `u_{table.name}_{table.unique[0]}` ({', '.join(table.unique)})")
    return f"CREATE TABLE `{database}`.`{table.name}` ({', '.join(columns)}) DEFAULT CHARSET=utf8mb4"


# ---------------------------------------------------------------- values

_TEXT_ALPHABET = "abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789'\"\\%_,.-é漢字ñß😀\t"
_INT_RANGES = {
    "tinyint": (-128, 127), "smallint": (-32768, 32767), "mediumint": (-8388608, 8388607),
    "int": (-2147483648, 2147483647), "bigint": (-(2**63), 2**63 - 1),
}
_UINT_MAX = {"tinyint": 255, "smallint": 65535, "mediumint": 16777215, "int": 4294967295, "bigint": 2**64 - 1}
_TEXT_MAX = {"tinytext": 40, "text": 80, "mediumtext": 100, "longtext": 120}
_BLOB_MAX = {"tinyblob": 30, "blob": 60, "mediumblob": 80, "longblob": 100}
_FLOATS = (3.14159, 0.1, -1.5e-5, 1e10, -2.5, 123456.789, 0.0, 1.17549435e-38)
# The ends of each range, where text conversions round past the limit (FLOAT's maximum once stopped the
# encoder) and the smallest subnormals (MariaDB keeps them).
_FLOAT_ENDS = (3.40282e38, -3.40282e38, 1e-45, -1.4e-45, 1.1754942e-38)
_DOUBLE_ENDS = (1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -2.2250738585072014e-308)


def _quote(text: str) -> str:
    return "'" + escape_string(text) + "'"


def _text(rng: random.Random, limit: int) -> str:
    length = rng.choice((0, 1, rng.randint(1, limit)))
    text = "".join(rng.choice(_TEXT_ALPHABET) for _ in range(min(length, limit)))
    return text


def _type_parts(sql_type: str) -> tuple[str, list[str], bool]:
    match = re.match(r"\s*(\w+)\s*(?:\((.*?)\))?(.*)$", sql_type, re.DOTALL)
    assert match is not None
    args = [a.strip() for a in (match.group(2) or "").split(",") if a.strip()]
    return match.group(1).lower(), args, "unsigned" in match.group(3).lower()


def value(rng: random.Random, column: Column, json_escapes: bool = True) -> str:
    """A random SQL literal that fits `column` (NULL sometimes when it is nullable)."""
    if column.nullable and rng.random() < 0.08:
        return "NULL"
    name, args, unsigned = _type_parts(column.sql_type)
    if name in _INT_RANGES:
        low, high = (0, _UINT_MAX[name]) if unsigned else _INT_RANGES[name]
        return str(rng.choice((low, high, 0, 1, rng.randint(low, high), rng.randint(-100, 100) if low < 0 else 7)))
    if name == "decimal":
        precision, scale = int(args[0]), int(args[1]) if len(args) > 1 else 0
        # Sometimes every digit the type holds (the largest magnitude), else up to 18 whole digits.
        widest = rng.random() < 0.1
        whole = 10 ** (precision - scale) - 1 if widest else rng.randint(0, 10 ** min(precision - scale, 18) - 1)
        fraction = (10**scale - 1 if widest else rng.randint(0, 10**scale - 1)) if scale else 0
        sign = rng.choice(("", "-"))
        return f"{sign}{whole}.{fraction:0{scale}d}" if scale else f"{sign}{whole}"
    if name == "float":
        return repr(rng.choice((*_FLOATS, *_FLOAT_ENDS, round(rng.uniform(-1e6, 1e6), rng.randint(0, 6)))))
    if name == "double":
        return repr(rng.choice((*_FLOATS, *_DOUBLE_ENDS, rng.uniform(-1e12, 1e12), 2.2250738585072014e-308)))
    if name == "bit":
        return str(rng.randint(0, 2 ** int(args[0]) - 1))
    if name == "year":
        return str(rng.randint(1901, 2155))
    # Years before 1000 are outside MySQL's documented range but stored by MariaDB and MySQL alike.
    if name == "date":
        return _quote(f"{rng.choice((1, 99, rng.randint(1000, 9999))):04d}-{rng.randint(1, 12):02d}-"
                      f"{rng.randint(1, 28):02d}")
    if name in ("datetime", "timestamp"):
        year = rng.randint(1971, 2037) if name == "timestamp" else rng.choice((1, 999, rng.randint(1000, 9999)))
        text = (f"{year:04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
        if args:
            text += "." + "".join(rng.choice("0123456789") for _ in range(int(args[0])))
        return _quote(text)
    if name == "time":
        hours = rng.choice((0, 12, 838, -838, rng.randint(-838, 838)))
        text = f"{'-' if hours < 0 else ''}{abs(hours):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        if args and abs(hours) < 838:  # 838:59:59 is the limit, fractions included
            text += "." + "".join(rng.choice("0123456789") for _ in range(int(args[0])))
        return _quote(text)
    if name in ("char", "varchar"):
        return _quote(_text(rng, int(args[0])).rstrip(" ") if name == "char" else _text(rng, int(args[0])))
    if name in _TEXT_MAX:
        return _quote(_text(rng, _TEXT_MAX[name]))
    if name == "enum":
        members = re.findall(r"'((?:[^']|'')*)'", column.sql_type)
        return _quote(rng.choice(members))
    if name == "set":
        members = re.findall(r"'((?:[^']|'')*)'", column.sql_type)
        return _quote(",".join(m for m in members if rng.random() < 0.5))
    if name == "json":
        document = rng.choice(({"a": rng.randint(0, 9), "s": _text(rng, 8)}, [1, "two", None, 3.5], "text",
                               rng.randint(-5, 5), {"nested": {"k": [True, False]}}, {}))
        # Escaped (\u00f1) or not (ñ): MariaDB keeps JSON text as written.
        return _quote(json.dumps(document, ensure_ascii=rng.random() < 0.5 and json_escapes))
    if name in ("binary", "varbinary") or name in _BLOB_MAX:
        limit = int(args[0]) if args else _BLOB_MAX[name]
        data = bytes(rng.choice((0, 1, 0x27, 0x5C, 0x7F, 0x80, 0xFF, rng.randint(0, 255)))
                     for _ in range(rng.randint(0, limit)))
        return f"X'{data.hex()}'" if data else "''"
    raise WorkloadError(f"no value generator for column type {column.sql_type!r}")


# ---------------------------------------------------------------- the plan


@dataclass
class _Planner:
    options: Options
    rng: random.Random
    tables: list[Table] = field(default_factory=list)
    created: int = 0  # tables made by the workload, for unique names

    def __post_init__(self) -> None:
        self.tables = initial_tables(self.options.has("no_primary_key"))

    def value(self, column: Column) -> str:
        return value(self.rng, column, self.options.has("json_escapes"))

    # -- naming and style

    def name(self, table: Table, qualified: bool) -> str:
        # With "backquotes" names are sometimes quoted, sometimes bare (none of ours is a keyword).
        bare = self.options.has("backquotes") and self.rng.random() < 0.4
        quoted = table.name if bare else f"`{table.name}`"
        return f"`{self.options.database}`.{quoted}" if qualified else quoted

    def keyword(self, text: str) -> str:
        if self.options.has("mixed_case") and self.rng.random() < 0.4:
            return "".join(ch.lower() if self.rng.random() < 0.5 else ch.upper() for ch in text)
        return text

    def comment(self, statement: str) -> str:
        if not self.options.has("comments") or self.rng.random() < 0.5:
            return statement
        return self.rng.choice((
            f"/* migration {self.rng.randint(1, 999)}: generated */ {statement}",
            f"{statement} -- applied by the seeded workload",
            f"# gh-ost style note\n{statement}",
            statement.replace(" ", " /* inline */ ", 1),
        ))

    def session(self) -> tuple[bool, str]:
        """(default database?, time zone) for the next step."""
        qualified = self.options.has("qualified") and self.rng.random() < 0.4
        zone = self.rng.choice(TIME_ZONES) if self.options.has("time_zone") else "+00:00"
        return not qualified, zone

    # -- DML

    def row(self, table: Table, key: dict[str, Any] | None = None) -> dict[str, str]:
        row = {c.name: self.value(c) for c in table.columns}
        for k in table.key:
            row[k] = self.key_value(table.column(k))
        for k in table.unique:
            if self.rng.random() < 0.5:
                row[k] = _quote(f"u{self.rng.randint(1, KEY_SPACE // 2)}")
        row.update(key or {})
        return row

    def key_value(self, column: Column) -> str:
        name, _, _ = _type_parts(column.sql_type)
        if name in _INT_RANGES:
            return str(self.rng.randint(1, KEY_SPACE))
        return _quote(self.rng.choice(("eu", "us", "apac", "Eu", "ü")))

    def where_key(self, table: Table) -> str:
        return " AND ".join(f"`{k}` = {self.key_value(table.column(k))}" for k in table.key)

    def insert(self, table: Table, name: str, verb: str = "INSERT") -> str:
        rows = [self.row(table) for _ in range(self.rng.randint(1, 4))]
        columns = list(rows[0])
        values = ", ".join("(" + ", ".join(r[c] for c in columns) + ")" for r in rows)
        return f"{self.keyword(verb)} {self.keyword('INTO')} {name} ({', '.join(f'`{c}`' for c in columns)}) " \
               f"{self.keyword('VALUES')} {values}"

    def assignments(self, table: Table) -> list[Column]:
        candidates = list(table.non_key)
        return self.rng.sample(candidates, k=min(len(candidates), self.rng.randint(1, 3)))

    def dml(self, kind: str, table: Table, name: str) -> str:
        rng = self.rng
        if kind == "insert":
            return self.insert(table, name)
        if kind == "replace":
            return self.insert(table, name, "REPLACE")
        if kind == "upsert":
            columns = self.assignments(table)
            updates = ", ".join(rng.choice((f"`{c.name}` = VALUES(`{c.name}`)", f"`{c.name}` = {self.value(c)}"))
                                for c in columns)
            return f"{self.insert(table, name)} {self.keyword('ON DUPLICATE KEY UPDATE')} {updates}"
        sets = ", ".join(f"`{c.name}` = {self.value(c)}" for c in self.assignments(table))
        if kind == "update":
            return f"{self.keyword('UPDATE')} {name} SET {sets} WHERE {self.where_key(table)}"
        if kind == "range_update":
            low = rng.randint(1, KEY_SPACE)
            return f"UPDATE {name} SET {sets} WHERE `id` BETWEEN {low} AND {low + rng.randint(1, 25)}"
        if kind == "key_update":
            moved = ", ".join(f"`{k}` = {self.key_value(table.column(k))}" for k in table.key
                              if k == "id" or rng.random() < 0.5)
            return f"UPDATE {name} SET {moved} WHERE {self.where_key(table)}"
        if kind == "delete":
            if rng.random() < 0.3:
                low = rng.randint(1, KEY_SPACE)
                return f"{self.keyword('DELETE FROM')} {name} WHERE `id` BETWEEN {low} AND {low + rng.randint(1, 8)}"
            return f"{self.keyword('DELETE FROM')} {name} WHERE {self.where_key(table)}"
        if kind == "insert_ignore":
            return self.insert(table, name, "INSERT IGNORE")
        if kind == "order_limit":
            # Which rows a LIMIT picks is MySQL's to say: row events carry the rows it chose.
            order = ", ".join(f"`{k}`{rng.choice(('', ' DESC'))}" for k in table.key)
            limit = f"{self.keyword('ORDER BY')} {order} {self.keyword('LIMIT')} {rng.randint(1, 4)}"
            if rng.random() < 0.5:
                return f"{self.keyword('UPDATE')} {name} SET {sets} {limit}"
            return f"{self.keyword('DELETE FROM')} {name} WHERE `id` > {rng.randint(1, KEY_SPACE)} {limit}"
        raise WorkloadError(f"not a DML kind: {kind}")

    def multi_table(self, default_db: bool) -> str | None:
        """One statement that changes two tables joined on `id`: the row events of both come in one statement."""
        if len(self.tables) < 2:
            return None
        left, right = self.rng.sample(self.tables, k=2)
        low = self.rng.randint(1, KEY_SPACE)
        left_name, right_name = self.name(left, not default_db), self.name(right, not default_db)
        joined = f"{left_name} AS l {self.keyword('JOIN')} {right_name} AS r ON l.`id` = r.`id`"
        where = f"WHERE l.`id` BETWEEN {low} AND {low + self.rng.randint(0, 12)}"
        if self.rng.random() < 0.3:
            if default_db:
                return f"{self.keyword('DELETE')} l, r {self.keyword('FROM')} {joined} {where}"
            # Without a default database MariaDB cannot resolve aliases in the DELETE list ("No database
            # selected"): qualified names throughout, as people write it there.
            return (f"{self.keyword('DELETE')} {left_name}, {right_name} {self.keyword('FROM')} {left_name} "
                    f"{self.keyword('JOIN')} {right_name} ON {left_name}.`id` = {right_name}.`id` "
                    f"WHERE {left_name}.`id` BETWEEN {low} AND {low + self.rng.randint(0, 12)}")
        sets = [f"{alias}.`{c.name}` = {self.value(c)}" for alias, table in (("l", left), ("r", right))
                for c in self.assignments(table)[:1]]
        return f"{self.keyword('UPDATE')} {joined} SET {', '.join(sets)} {where}"

    def transaction(self) -> Step | None:
        kinds = [k for k in DML_KINDS if k != "rollback" and self.options.has(k)]
        if not kinds:
            return None
        default_db, zone = self.session()
        statements: list[str] = []
        for _ in range(self.rng.randint(1, 5)):
            kind = self.rng.choice(kinds)
            if kind == "savepoint":
                statements += self.savepoint(kinds, default_db)
            elif kind == "multi_table":
                statements += [made] if (made := self.multi_table(default_db)) is not None else []
            else:
                table = self.rng.choice(self.tables)
                statements.append(self.dml(kind, table, self.name(table, not default_db)))
        if not statements:
            return None
        commit = not (self.options.has("rollback") and self.rng.random() < 0.1)
        return Step("transaction" if commit else "rollback", tuple(statements), default_db, zone, commit)

    def savepoint(self, kinds: list[str], default_db: bool) -> list[str]:
        """Changes rolled back to a savepoint inside a transaction that goes on (and may commit)."""
        self.created += 1
        point = f"sp{self.created}"
        plain = [k for k in kinds if k not in ("savepoint", "multi_table")] or ["insert"]
        undone = []
        for _ in range(self.rng.randint(1, 3)):
            table = self.rng.choice(self.tables)
            undone.append(self.dml(self.rng.choice(plain), table, self.name(table, not default_db)))
        return [f"{self.keyword('SAVEPOINT')} {point}", *undone, f"{self.keyword('ROLLBACK TO SAVEPOINT')} {point}"]

    # -- DDL

    def fresh_column(self, table: Table) -> str:
        base = self.rng.choice(("added", "Extra", "note2", "flag", "s"))
        name, n = base, 1
        while any(c.name.lower() == name.lower() for c in table.columns):
            n += 1
            name = f"{base}{n}"
        return name

    def column_clause(self, kind: str, table: Table, untouchable: frozenset[str] = frozenset()
                      ) -> tuple[str, Table, frozenset[str]] | None:
        """One ALTER TABLE clause of `kind`, the table after it and the columns it names, or None when it does
        not apply. It names no column of `untouchable`: the clauses of one ALTER all refer to the table as it
        was before the statement, so MySQL refuses one that names a column another clause drops, renames or
        adds (`ADD s AFTER bn, DROP bn`: "Unknown column 'bn'")."""
        rng = self.rng
        columns = list(table.columns)
        free = [c for c in columns if c.name not in untouchable]
        free_non_key = [c for c in table.non_key if c.name not in untouchable]
        if kind in ("add_column", "add_column_default", "add_column_after"):
            new_type = rng.choice(("INT", "VARCHAR(12)", "DECIMAL(8,2)", "DATETIME", "DOUBLE", "TINYINT UNSIGNED"))
            column = Column(self.fresh_column(table), new_type)
            clause = f"{self.keyword('ADD')} {rng.choice(('COLUMN ', ''))}`{column.name}` {new_type}"
            if kind == "add_column_default":
                default = self.value(replace(column, nullable=False))
                if new_type == "DATETIME" and rng.random() < 0.5:
                    default = "CURRENT_TIMESTAMP"  # filled in at the DDL's commit time (session time zone)
                column = replace(column, nullable=rng.random() < 0.5, default=default)
                clause += ("" if column.nullable else " NOT NULL") + f" {self.keyword('DEFAULT')} {column.default}"
            named = {column.name}
            if kind == "add_column_after":
                if rng.random() < 0.25 or not free:
                    clause += f" {self.keyword('FIRST')}"
                    columns.insert(0, column)
                else:
                    after = rng.choice(free)
                    shown = after.name.upper() if self.options.has("mixed_case") and rng.random() < 0.3 else after.name
                    clause += f" {self.keyword('AFTER')} `{shown}`"
                    columns.insert(columns.index(after) + 1, column)
                    named.add(after.name)
            else:
                columns.append(column)
            return clause, replace(table, columns=tuple(columns)), frozenset(named)
        if kind == "modify_type":
            widen = [(c, _widened(c.sql_type)) for c in free_non_key if _widened(c.sql_type)]
            if not widen:
                return None
            column, wider = rng.choice(widen)
            assert wider is not None
            changed = replace(column, sql_type=wider)
            columns[columns.index(column)] = changed
            null = "" if column.nullable else " NOT NULL"
            return (f"{self.keyword('MODIFY')} {rng.choice(('COLUMN ', ''))}`{column.name}` {wider}{null}",
                    replace(table, columns=tuple(columns)), frozenset({column.name}))
        if kind == "drop_column":
            if len(table.non_key) < 3 or not free_non_key:
                return None
            column = rng.choice(free_non_key)
            columns.remove(column)
            return (f"{self.keyword('DROP COLUMN')} `{column.name}`", replace(table, columns=tuple(columns)),
                    frozenset({column.name}))
        if kind == "rename_column":
            if not free_non_key:
                return None
            column = rng.choice(free_non_key)
            renamed = replace(column, name=self.fresh_column(table))
            columns[columns.index(column)] = renamed
            if rng.random() < 0.5:
                clause = f"{self.keyword('RENAME COLUMN')} `{column.name}` TO `{renamed.name}`"
            else:
                null = "" if column.nullable else " NOT NULL"
                clause = f"{self.keyword('CHANGE')} `{column.name}` `{renamed.name}` {column.sql_type}{null}"
            return clause, replace(table, columns=tuple(columns)), frozenset({column.name, renamed.name})
        return None

    def ddl(self, kind: str) -> list[Step]:
        rng = self.rng
        default_db, zone = self.session()
        qualified = not default_db
        table = rng.choice(self.tables)
        index = self.tables.index(table)
        name = self.name(table, qualified)
        alter = self.keyword("ALTER TABLE")

        def step(*statements: str) -> Step:
            return Step(kind, tuple(self.comment(s) for s in statements), default_db, zone)

        if kind == "multi_clause_alter":
            enabled = [k for k in ("add_column", "add_column_default", "add_column_after", "modify_type",
                                   "drop_column", "rename_column") if self.options.has(k)]
            clauses = []
            named: frozenset[str] = frozenset()
            for clause_kind in rng.sample(enabled, k=min(len(enabled), rng.randint(2, 3))):
                made = self.column_clause(clause_kind, table, untouchable=named)
                if made is not None:
                    clauses.append(made[0])
                    table = made[1]
                    named |= made[2]
            if len(clauses) < 2:
                return []
            self.tables[index] = table
            return [step(f"{alter} {name} " + ",\n  ".join(clauses))]
        made = self.column_clause(kind, table)
        if made is not None:
            self.tables[index] = made[1]
            return [step(f"{alter} {name} {made[0]}")]
        if kind == "rename_table":
            self.created += 1
            renamed = replace(table, name=f"{table.name.split('_r')[0]}_r{self.created}")
            self.tables[index] = renamed
            new_name = self.name(renamed, qualified)
            if rng.random() < 0.5:
                return [step(f"{self.keyword('RENAME TABLE')} {name} TO {new_name}")]
            return [step(f"{alter} {name} {self.keyword('RENAME TO')} {new_name}")]
        if kind == "truncate":
            return [step(f"{self.keyword('TRUNCATE')} {rng.choice(('TABLE ', ''))}{name}")]
        if kind == "create_like_select":
            self.created += 1
            copy = replace(table, name=f"copy{self.created}_{table.name}")
            self.tables.append(copy)
            copy_name = self.name(copy, qualified)
            low = rng.randint(1, KEY_SPACE)
            insert = f"INSERT INTO {copy_name} SELECT * FROM {name} WHERE `id` >= {low}"
            return [step(f"{self.keyword('CREATE TABLE')} {copy_name} {self.keyword('LIKE')} {name}"),
                    Step(kind, (insert,), default_db, zone)]
        if kind == "index":
            return self.index_ddl(table, name, step)
        if kind == "column_default":
            candidates = [c for c in table.non_key if _type_parts(c.sql_type)[0] in _DEFAULTABLE]
            if not candidates:
                return []
            column = rng.choice(candidates)
            change = (f"{self.keyword('SET DEFAULT')} {self.value(replace(column, nullable=False))}"
                      if rng.random() < 0.7 else self.keyword("DROP DEFAULT"))
            return [step(f"{alter} {name} {self.keyword('ALTER COLUMN')} `{column.name}` {change}")]
        if kind == "table_option":
            # Each rebuilds or relabels the table without a row event.
            option = rng.choice((f"COMMENT = {_quote(_text(rng, 20))}", "ENGINE = InnoDB", "FORCE",
                                 "ROW_FORMAT = DYNAMIC", "DEFAULT CHARSET = utf8mb4"))
            return [step(f"{alter} {name} {self.keyword(option)}")]
        if kind == "cutover":
            return self.cutover(table, index, default_db, zone, step)
        if kind == "widen_key":
            # A multi-tenant migration: a NOT NULL column joins the primary key; ids may then repeat.
            if not table.primary or len(table.key) > 2:
                return []
            added = Column(self.fresh_column(table), "SMALLINT", nullable=False, default="0")
            self.tables[index] = replace(table, columns=(*table.columns, added), key=(*table.key, added.name))
            key = ", ".join(f"`{k}`" for k in (*table.key, added.name))
            return [step(f"{alter} {name} {self.keyword('ADD COLUMN')} `{added.name}` SMALLINT NOT NULL "
                         f"{self.keyword('DEFAULT')} 0, {self.keyword('DROP PRIMARY KEY')}, "
                         f"{self.keyword('ADD PRIMARY KEY')} ({key})")]
        if kind == "create_drop":
            self.created += 1
            temp = replace(table, name=f"tmp{self.created}")
            temp_name = self.name(temp, qualified)
            create = create_table_sql(temp, self.options.database)
            if not qualified:
                create = create.replace(f"`{self.options.database}`.", "", 1)
            return [step(create), Step(kind, (self.insert(temp, temp_name),), default_db, zone),
                    step(f"{self.keyword('DROP TABLE')} {temp_name}")]
        return []

    def index_ddl(self, table: Table, name: str, step: Any) -> list[Step]:
        """An index added (CREATE INDEX or ALTER TABLE ADD INDEX), sometimes dropped again at once: DDL that
        changes no row and no column, which the pipeline must read and leave alone."""
        candidates = [c for c in table.columns if _type_parts(c.sql_type)[0] in _DEFAULTABLE]
        if not candidates:
            return []
        self.created += 1
        index_name = f"ix{self.created}"
        column = self.rng.choice(candidates)
        if self.rng.random() < 0.5:
            made = step(f"{self.keyword('CREATE INDEX')} `{index_name}` ON {name} (`{column.name}`)")
        else:
            made = step(f"{self.keyword('ALTER TABLE')} {name} {self.keyword('ADD INDEX')} `{index_name}` "
                        f"(`{column.name}`)")
        if self.rng.random() < 0.3:
            return [made, step(f"{self.keyword('DROP INDEX')} `{index_name}` ON {name}")]
        return [made]

    def cutover(self, table: Table, index: int, default_db: bool, zone: str, step: Any) -> list[Step]:
        """gh-ost's online schema change: a ghost copy with the new column, the rows copied, then one RENAME
        TABLE swaps it in and the old table is dropped. The table keeps its name, with the new column."""
        self.created += 1
        ghost = replace(table, name=f"_{table.name}_gho{self.created}")
        old = replace(table, name=f"_{table.name}_del{self.created}")
        qualified = not default_db
        added = Column(self.fresh_column(table), self.rng.choice(("INT", "VARCHAR(12)", "DATE")))
        migrated = replace(table, columns=(*table.columns, added))
        self.tables[index] = migrated
        name, ghost_name, old_name = (self.name(t, qualified) for t in (table, ghost, old))
        columns = ", ".join(f"`{c.name}`" for c in table.columns)
        copy = Step("cutover", (f"INSERT INTO {ghost_name} ({columns}) SELECT {columns} FROM {name}",),
                    default_db, zone)
        return [step(f"{self.keyword('CREATE TABLE')} {ghost_name} {self.keyword('LIKE')} {name}"),
                step(f"{self.keyword('ALTER TABLE')} {ghost_name} ADD COLUMN `{added.name}` {added.sql_type}"),
                copy,
                step(f"{self.keyword('RENAME TABLE')} {name} TO {old_name}, {ghost_name} TO {name}"),
                step(f"{self.keyword('DROP TABLE')} {old_name}")]

    # -- whole plan

    def preload(self) -> list[Step]:
        steps = [Step("create", (f"CREATE DATABASE IF NOT EXISTS `{self.options.database}` "
                                 "CHARACTER SET utf8mb4",), default_database=False)]
        steps += [Step("create", (create_table_sql(t, self.options.database),), default_database=False)
                  for t in self.tables]
        if not self.options.has("preload"):
            return steps
        for table in self.tables:
            rows = []
            for i in range(1, self.options.preload_rows + 1):
                key = {k: (str(i) if k == "id" else self.key_value(table.column(k))) for k in table.key}
                if table.unique:
                    key[table.unique[0]] = _quote(f"p{i}")
                row = self.row(table, key)
                if not self.options.has("preload_float"):
                    row.update({c.name: "NULL" for c in table.columns if _type_parts(c.sql_type)[0] == "float"})
                rows.append(row)
            columns = list(rows[0])
            values = ", ".join("(" + ", ".join(r[c] for c in columns) + ")" for r in rows)
            steps.append(Step("preload", (f"INSERT IGNORE INTO `{table.name}` ({', '.join(f'`{c}`' for c in columns)})"
                                          f" VALUES {values}",)))
        return steps

    def changes(self) -> list[Step]:
        ddl_kinds = [k for k in DDL_KINDS if self.options.has(k)]
        total = self.options.transactions
        ddl_at = sorted(self.rng.sample(range(1, total), k=min(total - 1, self.options.ddl_statements))) \
            if ddl_kinds else []
        steps: list[Step] = []
        for i in range(total):
            while ddl_at and ddl_at[0] == i:
                ddl_at.pop(0)
                for _ in range(5):  # a kind may not apply to the chosen table; try another
                    made = self.ddl(self.rng.choice(ddl_kinds))
                    if made:
                        steps += made
                        break
            transaction = self.transaction()
            if transaction is not None:
                steps.append(transaction)
        return steps


# Column types an index or a plain DEFAULT takes without a prefix length or an expression.
_DEFAULTABLE = ("tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "char", "varchar", "date",
                "datetime", "double", "year")

_WIDENINGS = (("TINYINT", "SMALLINT"), ("SMALLINT", "INT"), ("MEDIUMINT", "INT"), ("INT", "BIGINT"),
              ("FLOAT", "DOUBLE"))


def _widened(sql_type: str) -> str | None:
    """A type MySQL converts `sql_type` values to without loss, which Delta's type widening follows."""
    name, args, unsigned = _type_parts(sql_type)
    if unsigned:
        return None
    for old, new in _WIDENINGS:
        if name == old.lower() and not args:
            return new
    if name == "varchar":
        return f"VARCHAR({int(args[0]) * 2})"
    if name == "decimal" and int(args[0]) <= 30:
        return f"DECIMAL({int(args[0]) + 4},{args[1] if len(args) > 1 else 0})"
    return None


@dataclass(frozen=True)
class Plan:
    """The statements of one seed: `before` runs before the changefeed starts, `after` while it runs."""

    before: tuple[Step, ...]
    after: tuple[Step, ...]
    tables: tuple[Table, ...]  # the tables the workload leaves (for reports)

    @property
    def ddl_count(self) -> int:
        return sum(1 for s in self.after if s.kind in DDL_KINDS)

    def script(self) -> str:
        """The plan as an SQL script (`-- session: ...` lines say how each step runs)."""
        lines = []
        for step in (*self.before, *self.after):
            lines.append(f"-- {step.kind}: {'default database' if step.default_database else 'no default database'}"
                         f", time_zone {step.time_zone}{'' if step.commit else ', rolled back'}")
            lines += [s + ";" for s in step.statements]
        return "\n".join(lines) + "\n"


def plan(options: Options) -> Plan:
    planner = _Planner(options, random.Random(options.seed))
    before = planner.preload()
    after = planner.changes()
    return Plan(tuple(before), tuple(after), tuple(planner.tables))


@dataclass
class RunStats:
    statements: int = 0
    refused: int = 0  # statements MySQL refused (duplicate keys, ...), as an application would see
    commits: int = 0
    rollbacks: int = 0


def run(connect: Any, steps: Iterable[Step], database: str, stats: RunStats | None = None) -> RunStats:
    """Execute `steps`; `connect(database_or_None)` returns a pymysql connection with autocommit off."""
    stats = stats or RunStats()
    with _sessions(connect, database) as sessions:
        for step in steps:
            conn = sessions[step.default_database]
            with conn.cursor() as cur:
                cur.execute("SET time_zone = %s", (step.time_zone,))
                for statement in step.statements:
                    stats.statements += 1
                    try:
                        cur.execute(statement)
                    except pymysql.err.IntegrityError:
                        stats.refused += 1  # a duplicate key: the statement fails alone
            if step.commit:
                conn.commit()
                stats.commits += 1
            else:
                conn.rollback()
                stats.rollbacks += 1
    return stats


@contextlib.contextmanager
def _sessions(connect: Any, database: str) -> Iterator[_Sessions]:
    sessions = _Sessions(connect, database)
    try:
        yield sessions
    finally:
        for conn in sessions.values():
            conn.close()


class _Sessions(dict[bool, Any]):
    """{True: a session with the default database, False: one without}, each opened when first needed
    (the database does not exist before the first steps create it)."""

    def __init__(self, connect: Any, database: str) -> None:
        super().__init__()
        self._connect, self._database = connect, database

    def __missing__(self, with_database: bool) -> Any:
        conn = self._connect(self._database if with_database else None)
        self[with_database] = conn
        return conn


@click.command()
@click.option("--seed", type=int, required=True, help="The seed: the same seed gives the same statements.")
@click.option("--database", default="eq", show_default=True, help="Database the workload creates and changes.")
@click.option("--url", default=None, help="mysql://user:password@host:port to run against (else --print).")
@click.option("--print", "print_only", is_flag=True, help="Print the SQL script instead of running it.")
@click.option("--transactions", default=150, show_default=True)
@click.option("--ddl", "ddl_statements", default=14, show_default=True, help="DDL statements interleaved.")
@click.option("--preload-rows", default=60, show_default=True, help="Rows per table before the changes.")
@click.option("--kind", "include", multiple=True, help=f"Only these kinds (repeatable). Kinds: {', '.join(KINDS)}")
@click.option("--exclude", multiple=True, help="Leave these kinds out (repeatable).")
def main(seed: int, database: str, url: str | None, print_only: bool, transactions: int, ddl_statements: int,
         preload_rows: int, include: tuple[str, ...], exclude: tuple[str, ...]) -> None:
    """Plan (and run) the seeded random workload."""
    try:
        kinds = parse_kinds(include, exclude)
    except WorkloadError as exc:
        raise click.BadParameter(str(exc)) from exc
    workload = plan(Options(seed, database, preload_rows, transactions, ddl_statements, kinds))
    if print_only or url is None:
        click.echo(workload.script(), nl=False)
        return
    from lakefeed_testing.mysql import _from_url

    server = _from_url(url)
    stats = run(lambda db: server.connect(db, autocommit=False), (*workload.before, *workload.after), database)
    click.echo(f"seed {seed}: {stats.statements} statements ({stats.refused} refused by MySQL), "
               f"{stats.commits} commits, {stats.rollbacks} rollbacks, {workload.ddl_count} DDL")


if __name__ == "__main__":
    main()
