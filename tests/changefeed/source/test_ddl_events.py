"""The DDL events one statement becomes (pure): per-table DROP, one RENAME with qualified SQL when needed."""

from changefeed.ddl_parse import parse_ddl
from changefeed.model import DDLKind, Position, TableName
from changefeed.source.ddl import ddl_events

POS = Position("mysql-bin.000001", 4)


def _events(sql: str, session_db: str) -> list[tuple[str, str, list[str]]]:
    parsed = parse_ddl(sql, session_db)
    assert parsed is not None
    return [(e.database, e.sql, [str(t) for t in e.tables]) for e in ddl_events(sql, parsed, session_db, 1, POS, ())]


def test_multi_table_drop_is_one_event_per_table() -> None:
    sql = "DROP TABLE a.x, y"
    assert _events(sql, "s") == [("a", sql, ["a.x"]), ("s", sql, ["s.y"])]


def test_rename_keeps_its_sql_when_the_event_database_resolves_it() -> None:
    sql = "RENAME TABLE a.t TO b.t"
    assert _events(sql, "") == [("b", sql, ["a.t", "b.t"])]
    assert _events("RENAME TABLE t TO u", "s") == [("s", "RENAME TABLE t TO u", ["s.t", "s.u"])]


def test_rename_sql_is_qualified_when_the_session_database_mattered() -> None:
    # Several pairs: one event per pair, each qualified (tiflow cdc/model/sink.go FromJobWithArgs).
    assert _events("RENAME TABLE t TO b.u, c TO d", "s") == [
        ("b", "RENAME TABLE `s`.`t` TO `b`.`u`", ["s.t", "b.u"]),
        ("s", "RENAME TABLE `s`.`c` TO `s`.`d`", ["s.c", "s.d"])]
    assert _events("RENAME TABLE t TO b.u", "s") == [("b", "RENAME TABLE `s`.`t` TO `b`.`u`", ["s.t", "b.u"])]


def test_schema_level_and_other_statements() -> None:
    assert _events("CREATE DATABASE x", "s") == [("x", "CREATE DATABASE x", [])]
    assert _events("/*!40101 ALTER DATABASE x CHARACTER SET utf8mb4 */", "") == [
        ("x", "/*!40101 ALTER DATABASE x CHARACTER SET utf8mb4 */", [])]
    assert _events("CREATE VIEW v AS SELECT 1", "s") == [("s", "CREATE VIEW v AS SELECT 1", ["s.v"])]
    parsed = parse_ddl("CREATE TABLE a.t LIKE b.s", "")
    assert parsed is not None and parsed.kind is DDLKind.CREATE_TABLE and parsed.tables == (TableName("a", "t"),)
