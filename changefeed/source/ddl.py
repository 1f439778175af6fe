"""The DDL events a statement read by changefeed.ddl_parse becomes: each names the schema of the
table it touches, never the session's default database.

- A multi-table DROP TABLE (or DROP VIEW) becomes one event per table, each with that table's schema
  (TiCDC splits a multi-table DROP into one DDL event per table: docs.pingcap.com/tidb/stable/ticdc-ddl).
  Every other event touches one table, but a RENAME (old, new) and EXCHANGE PARTITION (the
  partitioned table, the other table).
- A RENAME TABLE becomes one event per pair, in statement order, named after the pair's new table
  (TiCDC splits a multi-table rename likewise, each with the SQL `RENAME TABLE `a`.`t` TO `b`.`u``:
  tiflow cdc/model/sink.go `FromJobWithArgs`, ActionRenameTables). Applying the pairs in order gives
  the statement's result even for a chain or a swap. A single rename keeps its SQL, rewritten with
  every name qualified when the original, read with the event's database as default, would name
  other tables (`RENAME TABLE t TO b.t` from a session in `a`): a consumer has no other way to learn
  the session's database.
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
    dropping = parsed.sql.split(None, 1)[:1] == ["DROP"] or parsed.kind is DDLKind.DROP_TABLE
    if dropping and len(parsed.tables) > 1:  # DROP TABLE or DROP VIEW of several
        return [DDLEvent(sql, parsed.kind, t.schema, (t,), commit_ts, position, ()) for t in parsed.tables]
    if parsed.kind is DDLKind.RENAME_TABLE and len(parsed.renames) > 1:
        return [DDLEvent(qualified_rename_sql((r,)), parsed.kind, r.new.schema, (r.old, r.new), commit_ts, position,
                         tuple(s for s in schemas if s.name == r.new)) for r in parsed.renames]
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
