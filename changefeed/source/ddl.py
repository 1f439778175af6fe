"""The DDL events a statement read by changefeed.ddl_parse becomes: each names the schema of the
table it touches, never the session's default database.

- A multi-table DROP TABLE becomes one event per table, each with that table's schema (TiCDC splits
  a multi-table DROP into one DDL event per table: docs.pingcap.com/tidb/stable/ticdc-ddl).
- A RENAME TABLE stays one event (its pairs may form a chain or a swap that only applies in
  statement order), named after the first new table. Its SQL is rewritten with every name qualified
  when the original, read with the event's database as default, would name other tables (`RENAME
  TABLE t TO b.t` from a session in `a`): a consumer has no other way to learn the session's database.
- Schema-level statements (CREATE/DROP/ALTER DATABASE) name their database.
"""

from __future__ import annotations

from changefeed.ddl_parse import ParsedDDL, parse_ddl, qualified_rename_sql
from changefeed.errors import DDLParseError
from changefeed.model import DDLEvent, DDLKind, Position, TableSchema


def _rename_sql(sql: str, parsed: ParsedDDL, database: str) -> str:
    try:
        again = parse_ddl(sql, database)
    except DDLParseError:
        again = None
    return sql if again is not None and again.renames == parsed.renames else qualified_rename_sql(parsed.renames)


def ddl_events(sql: str, parsed: ParsedDDL, session_db: str, commit_ts: int, position: Position,
               schemas: tuple[TableSchema, ...]) -> list[DDLEvent]:
    """`sql` as logged; `session_db` is the Query event's default database (used only for statements
    that touch no table and name no database, e.g. CREATE VIEW)."""
    if parsed.kind is DDLKind.DROP_TABLE and len(parsed.tables) > 1:
        return [DDLEvent(sql, parsed.kind, t.schema, (t,), commit_ts, position, ()) for t in parsed.tables]
    if parsed.kind is DDLKind.RENAME_TABLE:
        database = parsed.renames[0].new.schema
        return [DDLEvent(_rename_sql(sql, parsed, database), parsed.kind, database, parsed.tables, commit_ts,
                         position, schemas)]
    if parsed.database is not None:
        database = parsed.database
    elif parsed.tables:
        database = parsed.tables[0].schema
    else:
        database = session_db
    return [DDLEvent(sql, parsed.kind, database, parsed.tables, commit_ts, position, schemas)]
