"""Recognise DML that the binlog carries as a statement (a Query event) instead of row events.

With `binlog_format=STATEMENT` or `MIXED` (set globally, or by one session with
`SET SESSION binlog_format`), INSERT/UPDATE/DELETE/REPLACE/LOAD DATA are written to the binlog as
their SQL text (MySQL manual, "Setting The Binary Log Format"; LOAD DATA as an Execute_load_query
event). Capture reads rows, so such a statement's changes would be lost without a word: the capture
stops on it instead (`refuse_statement_dml`). Parsing is sqlglot's (MySQL dialect); this module only
picks the statement's target tables out of its syntax tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from changefeed.errors import ServerConfigError
from changefeed.model import Position, TableName

# Modifiers MySQL allows right after the verb that sqlglot does not parse there; none changes the
# target tables (MySQL manual: INSERT, UPDATE, DELETE, REPLACE statement syntax).
_MODIFIERS = frozenset({"LOW_PRIORITY", "HIGH_PRIORITY", "DELAYED", "QUICK", "IGNORE"})
_VERBS = {TokenType.INSERT: "INSERT", TokenType.UPDATE: "UPDATE", TokenType.DELETE: "DELETE"}
_SHOWN = 200  # characters of the statement quoted in an error


@dataclass(frozen=True)
class StatementDML:
    """A DML statement: its verb and target tables (None when sqlglot could not parse them)."""

    verb: str
    tables: tuple[TableName, ...] | None


def classify_dml(sql: str, database: str) -> StatementDML | None:
    """The statement as DML, or None when it is not DML (BEGIN, COMMIT, DDL, SAVEPOINT, GRANT...).

    `database` is the session's default database, which unqualified table names refer to."""
    try:
        tokens = sqlglot.tokenize(sql, read="mysql")
    except SqlglotError:
        # Not even tokenisable (e.g. binary literals decoded lossily): judge by the first word only,
        # and fail closed (tables unknown) when it is a DML verb.
        words = sql.split(None, 2)
        verb = " ".join(words[:2]).upper() if words and words[0].upper() == "LOAD" else (words or [""])[0].upper()
        return StatementDML(verb, None) if verb in ("INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD DATA") else None
    if not tokens:
        return None
    first = tokens[0]
    word = first.text.upper()
    if word == "LOAD" and len(tokens) > 1 and tokens[1].text.upper() in ("DATA", "XML"):
        return StatementDML(f"LOAD {tokens[1].text.upper()}", _load_target(tokens, database))
    if first.token_type in _VERBS or word == "REPLACE":
        verb = _VERBS.get(first.token_type, "REPLACE")
        return StatementDML(verb, _parsed_targets(_parsable(sql, tokens), database))
    if first.token_type == TokenType.WITH:  # WITH ... UPDATE/DELETE (MySQL 8)
        try:
            tree = sqlglot.parse_one(sql, read="mysql")
        except SqlglotError:
            return None
        if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
            return StatementDML(type(tree).__name__.upper(), _targets(tree, database))
    return None


def _parsable(sql: str, tokens: list[Token]) -> str:
    """The statement in a form sqlglot parses: REPLACE spelled INSERT (same syntax, MySQL manual
    "REPLACE Statement"), verb modifiers dropped."""
    if tokens[0].text.upper() == "REPLACE":
        # sqlglot's MySQL tokenizer reads REPLACE as a command and swallows the rest as one token.
        sql = "INSERT " + sql[tokens[0].end + 1:]
        tokens = sqlglot.tokenize(sql, read="mysql")
    head = sql[: tokens[0].end + 1]
    rest = tokens[0].end + 1
    for token in tokens[1:]:
        if token.text.upper() not in _MODIFIERS:
            break
        rest = token.end + 1
    return f"{head} {sql[rest:]}"


def _parsed_targets(sql: str, database: str) -> tuple[TableName, ...] | None:
    try:
        tree = sqlglot.parse_one(sql, read="mysql")
    except SqlglotError:
        return None
    if not isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
        return None
    return _targets(tree, database)


def _targets(tree: exp.Expression, database: str) -> tuple[TableName, ...] | None:
    this = tree.this
    if isinstance(this, exp.Schema):  # INSERT INTO t (a, b) ...
        this = this.this
    if not isinstance(this, exp.Table):
        return None
    references = [this, *(j.this for j in this.args.get("joins") or ())]
    if isinstance(tree, exp.Delete):
        # DELETE FROM t1, t2 USING ...: the FROM list is the target (USING only reads);
        # DELETE t1 FROM t1 JOIN t2: the names (or aliases) before FROM are.
        named = tree.args.get("tables")
        if named:  # DELETE t1, t2 FROM ...: the listed names (or aliases) are the targets
            by_name = {(t.alias_or_name.lower()): t for t in references if isinstance(t, exp.Table)}
            references = [by_name.get(t.name.lower(), t) for t in named]
    elif isinstance(tree, exp.Insert):
        references = [this]
    return tuple(dict.fromkeys(_name(t, database) for t in references if isinstance(t, exp.Table)))


def _name(table: exp.Table, database: str) -> TableName:
    return TableName(table.db or database, table.name)


def _load_target(tokens: list[Token], database: str) -> tuple[TableName, ...] | None:
    """LOAD DATA ... INTO TABLE [db.]t: the name after INTO TABLE (sqlglot has no MySQL LOAD DATA)."""
    for i in range(len(tokens) - 2):
        if tokens[i].token_type == TokenType.INTO and tokens[i + 1].token_type == TokenType.TABLE:
            name = tokens[i + 2].text
            if i + 4 < len(tokens) and tokens[i + 3].token_type == TokenType.DOT:
                return (TableName(name, tokens[i + 4].text),)
            return (TableName(database, name),)
    return None


def refuse_statement_dml(statement: StatementDML, sql: str, position: Position,
                         keeps_table: Callable[[TableName], bool]) -> None:
    """Raise ServerConfigError when a statement-logged DML changes a captured table (or may: its
    tables could not be parsed). Nothing is raised for tables the changefeed does not capture."""
    touched = _captured(statement.tables, keeps_table)
    if touched is not None and not touched:
        return
    text = " ".join(sql.split())
    shown = text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
    what = (f"table(s) {', '.join(str(t) for t in touched)}" if touched
            else "a table this changefeed may capture (its target could not be parsed)")
    raise ServerConfigError(
        f"{statement.verb} on {what} is in the binlog as a statement, not as rows, at {position} "
        f"({shown!r}): its rows cannot be captured. Fix: SET GLOBAL binlog_format=ROW (and in my.cnf) "
        "and make sure no session sets binlog_format; then, as the changes of this statement are not in "
        "the binlog as rows, re-create the changefeed with snapshot-mode: initial (or with --start "
        "after this statement once the target is repaired by hand)")


def _captured(tables: Iterable[TableName] | None,
              keeps_table: Callable[[TableName], bool]) -> tuple[TableName, ...] | None:
    if tables is None:
        return None
    return tuple(t for t in tables if keeps_table(t))
