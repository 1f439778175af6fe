"""Column renames and drops from an ALTER TABLE statement's text (pure; not a full SQL parser).

canal-JSON DDL messages carry only the SQL; the pipeline needs the clauses that change which columns
exist: `DROP [COLUMN] c`, `RENAME COLUMN a TO b`, and `CHANGE [COLUMN] a b <type>` (a rename when the
names differ). ADD COLUMN and type changes need no parsing: the next rows' layout carries them.
Clauses are split at top-level commas, so type parameters like DECIMAL(10,2) stay whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.DOTALL)
_NAME = r"(`(?:[^`]|``)+`|[\w$]+)"
_HEAD = re.compile(r"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+" + _NAME + r"(?:\s*\.\s*" + _NAME + r")?\s+",
                   re.IGNORECASE)
_DROP = re.compile(r"^DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?" + _NAME + r"\s*$", re.IGNORECASE)
_RENAME = re.compile(r"^RENAME\s+COLUMN\s+(?:IF\s+EXISTS\s+)?" + _NAME + r"\s+TO\s+" + _NAME + r"\s*$",
                     re.IGNORECASE)
_CHANGE = re.compile(r"^CHANGE\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?" + _NAME + r"\s+" + _NAME + r"\s+",
                     re.IGNORECASE)
_NOT_COLUMNS = re.compile(r"^DROP\s+(?:INDEX|KEY|PRIMARY|FOREIGN|CONSTRAINT|CHECK|PARTITION)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class RenameColumn:
    old: str
    new: str


ColumnChange = DropColumn | RenameColumn


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def split_clauses(body: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in body:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def column_changes(sql: str) -> list[ColumnChange]:
    """The column drops and renames of an ALTER TABLE, in statement order; [] for anything else."""
    text = _COMMENTS.sub(" ", sql).strip().rstrip(";")
    head = _HEAD.match(text)
    if head is None:
        return []
    changes: list[ColumnChange] = []
    for clause in split_clauses(text[head.end():]):
        if _NOT_COLUMNS.match(clause):
            continue
        if match := _DROP.match(clause):
            changes.append(DropColumn(_unquote(match.group(1))))
        elif match := _RENAME.match(clause) or _CHANGE.match(clause):
            old, new = _unquote(match.group(1)), _unquote(match.group(2))
            if old != new:  # CHANGE a a <type> only changes the type
                changes.append(RenameColumn(old, new))
    return changes
