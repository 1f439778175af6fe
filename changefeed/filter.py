"""Which changes a changefeed keeps: TiCDC table-filter rules and event filters (pure).

Table filter (TiDB/TiCDC syntax): each rule is `schema.table` with shell wildcards (`*`, `?`,
`[a-z]`, `[!a-z]`) on either side; a leading `!` makes it an exclusion; names may be quoted with
backticks or double quotes and `\\` escapes one character. The *last* rule that matches a table
decides; a table matching no rule is filtered out. Matching is case-insensitive unless asked.
System schemas (mysql, information_schema, performance_schema, sys) are never captured.

Event filters (TiCDC `[[filter.event-filters]]`): for the tables a matcher selects, drop the event
types listed in `ignore_event` (`insert`, `update`, `delete`, `all dml`, `create table`, `drop table`,
`truncate table`, `rename table`, `alter table`, `create index`, `drop index`, `create database`,
`drop database`, `all ddl`) and DDL whose SQL matches any `ignore_sql` regex.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from changefeed.errors import ConfigError
from changefeed.model import DDLEvent, DDLKind, RowChange, RowKind, TableName

SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys", "metrics_schema"})
_DML = {"insert": RowKind.INSERT, "update": RowKind.UPDATE, "delete": RowKind.DELETE}
_DDL = {kind.value.replace("_", " ").lower(): kind for kind in DDLKind}
EVENT_TYPES = frozenset({*_DML, "all dml", "all ddl", *(k for k in _DDL if k != "other")})


@dataclass(frozen=True)
class _Rule:
    negated: bool
    schema: re.Pattern[str]
    table: re.Pattern[str]


def _split(rule: str) -> tuple[str, str]:
    """Split `schema.table` at the first '.' outside quotes, brackets and escapes; unquote parts."""
    parts: list[str] = [""]
    quote: str | None = None
    in_class = escaped = False
    for ch in rule:
        if escaped:
            parts[-1] += "[" + ch + "]" if ch in "*?[]" else ch
            escaped = False
        elif quote:
            if ch == quote:
                quote = None
            else:
                parts[-1] += "[" + ch + "]" if ch in "*?[]" else ch
        elif ch == "\\":
            escaped = True
        elif ch in "`\"" and not in_class:
            quote = ch
        elif ch == "[":
            in_class = True
            parts[-1] += ch
        elif ch == "]":
            in_class = False
            parts[-1] += ch
        elif ch == "." and not in_class and len(parts) == 1:
            parts.append("")
        else:
            parts[-1] += ch
    if in_class:
        raise ConfigError(f"table filter rule {rule!r} has a '[' without its closing ']'")
    if quote or escaped or len(parts) != 2 or not parts[0] or not parts[1]:
        raise ConfigError(
            f"table filter rule {rule!r} is not of the form schema.table (e.g. 'db.*', '!db.tmp_*')")
    return parts[0], parts[1]


class TableFilter:
    """The rules; `database`, when given (the source URI's path), is a filter of its own: only its
    tables can match, whatever the rules say."""

    def __init__(self, rules: Sequence[str] = ("*.*",), case_sensitive: bool = False,
                 database: str | None = None) -> None:
        flags = 0 if case_sensitive else re.IGNORECASE
        self._database = None if database is None else (database if case_sensitive else database.lower())
        self._case_sensitive = case_sensitive
        self._rules: list[_Rule] = []
        for raw in rules:
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            negated = text.startswith("!")
            schema, table = _split(text[1:] if negated else text)
            self._rules.append(_Rule(negated, re.compile(fnmatch.translate(schema), flags),
                                     re.compile(fnmatch.translate(table), flags)))
        self._cache: dict[TableName, bool] = {}

    def matches(self, table: TableName) -> bool:
        cached = self._cache.get(table)
        if cached is not None:
            return cached
        result = False
        if table.schema.lower() not in SYSTEM_SCHEMAS and self._in_database(table.schema):
            for rule in reversed(self._rules):
                if rule.schema.match(table.schema) and rule.table.match(table.table):
                    result = not rule.negated
                    break
        self._cache[table] = result
        return result

    def matches_schema(self, schema: str) -> bool:
        """Could any table of this schema match? (for CREATE/DROP DATABASE)"""
        if schema.lower() in SYSTEM_SCHEMAS or not self._in_database(schema):
            return False
        return any(not r.negated and r.schema.match(schema) for r in self._rules)


    def _in_database(self, schema: str) -> bool:
        if self._database is None:
            return True
        return (schema if self._case_sensitive else schema.lower()) == self._database


@dataclass(frozen=True)
class EventFilterRule:
    matcher: Sequence[str] = ("*.*",)
    ignore_event: Sequence[str] = ()
    ignore_sql: Sequence[str] = ()
    case_sensitive: bool = False
    _tables: TableFilter = field(init=False, repr=False, compare=False)
    _sql: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = {e.lower() for e in self.ignore_event} - EVENT_TYPES
        if unknown:
            raise ConfigError(f"unknown ignore-event type(s) {sorted(unknown)}; known: {sorted(EVENT_TYPES)}")
        try:
            patterns = tuple(re.compile(p, re.IGNORECASE) for p in self.ignore_sql)
        except re.error as exc:
            raise ConfigError(f"ignore-sql pattern is not a valid regular expression: {exc}") from exc
        object.__setattr__(self, "_tables", TableFilter(self.matcher, self.case_sensitive))
        object.__setattr__(self, "_sql", patterns)

    def drops_row(self, change: RowChange) -> bool:
        if not self._tables.matches(change.table.name):
            return False
        events = {e.lower() for e in self.ignore_event}
        return "all dml" in events or any(_DML[e] is change.kind for e in events if e in _DML)

    def drops_ddl(self, ddl: DDLEvent) -> bool:
        if ddl.tables and not any(self._tables.matches(t) for t in ddl.tables):
            return False
        events = {e.lower() for e in self.ignore_event}
        if "all ddl" in events or any(_DDL.get(e) is ddl.kind for e in events):
            return True
        return any(p.search(ddl.sql) for p in self._sql)


@dataclass(frozen=True)
class ChangeFilter:
    """Table filter plus event filters: the one object capture asks."""

    tables: TableFilter = field(default_factory=TableFilter)
    events: tuple[EventFilterRule, ...] = ()

    def keeps_table(self, table: TableName) -> bool:
        return self.tables.matches(table)

    def keeps_row(self, change: RowChange) -> bool:
        return not any(rule.drops_row(change) for rule in self.events)

    def keeps_ddl(self, ddl: DDLEvent) -> bool:
        if ddl.tables:
            if not any(self.tables.matches(t) for t in ddl.tables):
                return False
        elif ddl.kind in (DDLKind.CREATE_DATABASE, DDLKind.DROP_DATABASE, DDLKind.ALTER_DATABASE):
            if not self.tables.matches_schema(ddl.database):
                return False
        else:
            return False  # views, users, routines: nothing a table sink can apply
        return not any(rule.drops_ddl(ddl) for rule in self.events)
