"""A canal-JSON DDL message read with changefeed.ddl_parse (the reader capture uses too), checked
against the table the message names, and where renamed tables end up (pure).

A table DDL message must name a database and a table its statement touches: one that does not (an
empty `database`, written by a changefeed that took the session's default database instead of the
table's schema; or SQL naming other tables) stops the query, since applying it to a guessed table
would lose or keep the wrong rows. Unqualified names in the SQL take the message's database.
"""

from __future__ import annotations

from changefeed.ddl_parse import ParsedDDL, RenameTable, parse_ddl
from changefeed.errors import DDLParseError
from changefeed.model import TableName
from spark_pipelines.errors import DDLError

_RECOVERY = ("fix the changefeed that wrote it (DDL events must name the table's schema), then move the "
             "query's checkpoint past this message")


def read_ddl(database: str | None, table: str | None, sql: str | None) -> ParsedDDL:
    """The statement of one table DDL message; DDLError when it cannot be mapped to its table."""
    statement = sql or ""
    if not database or not table:
        raise DDLError(f"the DDL message for table {database or ''!r}.{table or ''!r} names no database or "
                       f"no table, so it cannot be applied to one: {statement[:300]!r}; {_RECOVERY}")
    try:
        parsed = parse_ddl(statement, database)
    except DDLParseError as exc:
        raise DDLError(f"the DDL message for {database}.{table} cannot be read: {exc}") from exc
    if parsed is None or TableName(database, table) not in parsed.tables:
        touched = ", ".join(str(t) for t in parsed.tables) if parsed is not None else "none"
        raise DDLError(f"the DDL message for {database}.{table} has SQL that touches {touched}, not that "
                       f"table: {statement[:300]!r}; {_RECOVERY}")
    return parsed


def final_sources(renames: tuple[RenameTable, ...] | list[RenameTable]) -> dict[TableName, TableName | None]:
    """After the renames, which original table each touched name holds (None: no table by that name).
    `a TO tmp, b TO a, tmp TO b` (a swap) gives {a: b, b: a, tmp: None}."""
    holds: dict[TableName, TableName | None] = {}
    for rename in renames:
        for name in (rename.old, rename.new):
            holds.setdefault(name, name)
    for rename in renames:
        holds[rename.new], holds[rename.old] = holds[rename.old], None
    return holds
