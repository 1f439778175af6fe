"""Classify a DDL statement and name the tables it touches (pure; not a full SQL parser).

Only the statement head matters: comments are stripped, then the kind is decided by its leading
keywords and the table names are read from the fixed places MySQL grammar puts them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from changefeed.model import DDLKind, TableName

_COMMENTS = re.compile(r"/\*(?!!).*?\*/|--[^\n]*|#[^\n]*", re.DOTALL)
_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"({_NAME}(?:\s*\.\s*{_NAME})?)"
_IF_EXISTS = r"(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"


@dataclass(frozen=True)
class ParsedDDL:
    kind: DDLKind
    tables: tuple[TableName, ...]
    database: str | None = None  # for CREATE/DROP DATABASE


def _unquote(name: str) -> str:
    name = name.strip()
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def table_name(text: str, default_db: str) -> TableName:
    parts = re.findall(_NAME, text)
    if len(parts) == 2:
        return TableName(_unquote(parts[0]), _unquote(parts[1]))
    return TableName(default_db, _unquote(parts[0]))


def _names(text: str, default_db: str) -> tuple[TableName, ...]:
    return tuple(table_name(m, default_db) for m in re.findall(_QUALIFIED, text))


def parse_ddl(sql: str, default_db: str) -> ParsedDDL | None:
    """None when the statement is not DDL (e.g. DML logged in statement form, SAVEPOINT)."""
    text = _COMMENTS.sub(" ", sql).strip()
    flags = re.IGNORECASE | re.DOTALL
    if m := re.match(rf"(CREATE|DROP)\s+(?:DATABASE|SCHEMA)\s+{_IF_EXISTS}({_NAME})", text, flags):
        kind = DDLKind.CREATE_DATABASE if m.group(1).upper() == "CREATE" else DDLKind.DROP_DATABASE
        return ParsedDDL(kind, (), _unquote(m.group(2)))
    if m := re.match(rf"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+{_IF_EXISTS}{_QUALIFIED}",
                     text, flags):
        return ParsedDDL(DDLKind.CREATE_TABLE, (table_name(m.group(1), default_db),))
    if m := re.match(rf"DROP\s+(?:TEMPORARY\s+)?TABLES?\s+{_IF_EXISTS}(.*?)(?:\s+(?:RESTRICT|CASCADE))?\s*$",
                     text, flags):
        return ParsedDDL(DDLKind.DROP_TABLE, _names(m.group(1), default_db))
    if m := re.match(rf"TRUNCATE\s+(?:TABLE\s+)?{_QUALIFIED}", text, flags):
        return ParsedDDL(DDLKind.TRUNCATE_TABLE, (table_name(m.group(1), default_db),))
    if m := re.match(r"RENAME\s+TABLES?\s+(.*)$", text, flags):
        pairs = re.findall(rf"{_QUALIFIED}\s+TO\s+{_QUALIFIED}", m.group(1), flags)
        tables = tuple(table_name(n, default_db) for pair in pairs for n in pair)
        return ParsedDDL(DDLKind.RENAME_TABLE, tables)
    if m := re.match(rf"ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+{_IF_EXISTS}{_QUALIFIED}(.*)$", text, flags):
        old = table_name(m.group(1), default_db)
        rename = re.search(rf"(?:^|,)\s*RENAME\s+(?:TO\s+|AS\s+)?(?!COLUMN\b|INDEX\b|KEY\b){_QUALIFIED}\s*$",
                           m.group(2), flags)
        if rename:
            return ParsedDDL(DDLKind.RENAME_TABLE, (old, table_name(rename.group(1), default_db)))
        return ParsedDDL(DDLKind.ALTER_TABLE, (old,))
    if m := re.match(rf"CREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+|FULLTEXT\s+|SPATIAL\s+)?INDEX\s+"
                     rf"{_IF_EXISTS}{_NAME}.*?\s+ON\s+{_QUALIFIED}", text, flags):
        return ParsedDDL(DDLKind.CREATE_INDEX, (table_name(m.group(1), default_db),))
    if m := re.match(rf"DROP\s+INDEX\s+{_IF_EXISTS}{_NAME}\s+ON\s+{_QUALIFIED}", text, flags):
        return ParsedDDL(DDLKind.DROP_INDEX, (table_name(m.group(1), default_db),))
    if re.match(r"(CREATE|ALTER|DROP)\s+(?:DEFINER\s*=\s*\S+\s+)?"
                r"(VIEW|PROCEDURE|FUNCTION|TRIGGER|EVENT|USER|ROLE|SEQUENCE)\b", text, flags):
        return ParsedDDL(DDLKind.OTHER, ())
    if re.match(r"(GRANT|REVOKE|FLUSH|ANALYZE|OPTIMIZE|REPAIR)\b", text, flags):
        return ParsedDDL(DDLKind.OTHER, ())
    return None
