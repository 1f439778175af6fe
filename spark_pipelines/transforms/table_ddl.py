"""Table renames from a RENAME TABLE / ALTER TABLE ... RENAME statement's text (pure; not a full SQL parser).

canal-JSON sends a RENAME TABLE once per touched table (old and new names), with only the SQL; the
pipeline needs the (old, new) pairs in statement order. `RENAME TABLE a TO b, b TO c` is a chain:
applied in order, it moves a's rows to c through b.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.DOTALL)
_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"({_NAME}(?:\s*\.\s*{_NAME})?)"
_RENAME_TABLE = re.compile(r"^\s*RENAME\s+TABLES?\s+(?P<pairs>.*)$", re.IGNORECASE | re.DOTALL)
_PAIR = re.compile(rf"{_QUALIFIED}\s+(?:WAIT\s+\d+\s+|NOWAIT\s+)?TO\s+{_QUALIFIED}", re.IGNORECASE)
_ALTER = re.compile(rf"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+(?:IF\s+EXISTS\s+)?{_QUALIFIED}(?P<rest>.*)$",
                    re.IGNORECASE | re.DOTALL)
_ALTER_RENAME = re.compile(rf"(?:^|,)\s*RENAME\s+(?:TO\s+|AS\s+)?(?!COLUMN\b|INDEX\b|KEY\b){_QUALIFIED}\s*$",
                           re.IGNORECASE)


@dataclass(frozen=True)
class TableName:
    database: str
    table: str


@dataclass(frozen=True)
class RenameTable:
    old: TableName
    new: TableName


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _table(text: str, default_db: str) -> TableName:
    parts = [_unquote(p) for p in re.findall(_NAME, text)]
    return TableName(parts[0], parts[1]) if len(parts) == 2 else TableName(default_db, parts[0])


def table_renames(sql: str, default_db: str) -> list[RenameTable]:
    """The renames of a RENAME TABLE (or ALTER TABLE ... RENAME TO) in statement order; [] otherwise.
    Unqualified names are in `default_db` (the message's database: the session's, as MySQL logs it)."""
    text = _COMMENTS.sub(" ", sql).strip().rstrip(";")
    if match := _RENAME_TABLE.match(text):
        return [RenameTable(_table(old, default_db), _table(new, default_db))
                for old, new in _PAIR.findall(match.group("pairs"))]
    if (match := _ALTER.match(text)) and (rename := _ALTER_RENAME.search(match.group("rest"))):
        return [RenameTable(_table(match.group(1), default_db), _table(rename.group(1), default_db))]
    return []


def final_sources(renames: list[RenameTable]) -> dict[TableName, TableName | None]:
    """After the renames, which original table each touched name holds (None: no table by that name).
    `a TO tmp, b TO a, tmp TO b` (a swap) gives {a: b, b: a, tmp: None}."""
    holds: dict[TableName, TableName | None] = {}
    for rename in renames:
        for name in (rename.old, rename.new):
            holds.setdefault(name, name)
    for rename in renames:
        holds[rename.new], holds[rename.old] = holds[rename.old], None
    return holds
