"""DDL messages mapped to their table through changefeed.ddl_parse, and where renamed tables end up."""

import pytest

from changefeed.ddl_parse import DropColumn, RenameColumn, RenameTable
from changefeed.model import TableName
from spark_pipelines.errors import DDLError
from spark_pipelines.transforms.table_ddl import final_sources, read_ddl

A, B, C, TMP = (TableName("shop", n) for n in ("a", "b", "c", "tmp"))


@pytest.mark.parametrize(
    ("table", "sql", "expected"),
    [
        ("a", "RENAME TABLE a TO b", [RenameTable(A, B)]),
        ("b", "rename tables `a` to shop.b, `other`.`x y` TO c;", [
            RenameTable(A, B), RenameTable(TableName("other", "x y"), C)]),
        ("tmp", "RENAME TABLE /* swap */ a TO tmp, b TO a, tmp TO b",
         [RenameTable(A, TMP), RenameTable(B, A), RenameTable(TMP, B)]),
        ("b", "RENAME TABLE a WAIT 5 TO b", [RenameTable(A, B)]),
        ("a", "ALTER TABLE a RENAME TO b", [RenameTable(A, B)]),
        ("b", "ALTER TABLE shop.a ADD COLUMN x INT, RENAME AS `b`", [RenameTable(A, B)]),
        ("a", "ALTER TABLE a RENAME COLUMN x TO y", []),
        ("a", "ALTER TABLE a RENAME INDEX i TO j", []),
        ("a", "DROP TABLE a", []),
    ],
)
def test_table_renames(table: str, sql: str, expected: list[RenameTable]) -> None:
    assert list(read_ddl("shop", table, sql).renames) == expected


def test_qualified_statements_map_to_the_message_table() -> None:
    parsed = read_ddl("shop", "orders", "/*!40101 ALTER TABLE `shop`.`orders` DROP note, RENAME COLUMN a TO b */")
    assert parsed.column_changes == (DropColumn("note"), RenameColumn("a", "b"))
    assert read_ddl("b", "y", "DROP TABLE a.x, b.y").tables == (TableName("a", "x"), TableName("b", "y"))
    assert read_ddl("b", "t", "RENAME TABLE `a`.`t` TO `b`.`t`").renames == (
        RenameTable(TableName("a", "t"), TableName("b", "t")),)


@pytest.mark.parametrize(
    ("database", "table", "sql", "message"),
    [
        ("", "orders", "ALTER TABLE shop.orders DROP COLUMN note", "names no database"),
        (None, "orders", "DROP TABLE shop.orders", "names no database"),
        ("shop", "", "ALTER TABLE shop.orders DROP COLUMN note", "no table"),
        ("other", "orders", "ALTER TABLE shop.orders DROP COLUMN note", "touches shop.orders, not that table"),
        ("shop", "orders", "RENAME TABLE a TO b", "not that table"),
        ("shop", "orders", "ALTER TABLE orders DROP SOMETHING NEW x", "cannot be read"),
    ],
)
def test_a_message_that_cannot_be_mapped_stops_with_the_statement(
    database: str | None, table: str, sql: str, message: str
) -> None:
    with pytest.raises(DDLError, match=message) as error:
        read_ddl(database, table, sql)
    assert sql[:20] in str(error.value)


def test_final_sources_follow_chains_and_swaps() -> None:
    assert final_sources([RenameTable(A, B)]) == {A: None, B: A}
    assert final_sources([RenameTable(A, B), RenameTable(B, C)]) == {A: None, B: None, C: A}
    assert final_sources(read_ddl("shop", "a", "RENAME TABLE a TO tmp, b TO a, tmp TO b").renames) == {
        A: B, B: A, TMP: None}


def test_the_batch_stops_on_a_ddl_it_cannot_map_instead_of_skipping_it() -> None:
    from spark_pipelines.jobs.apply import schema_changes
    from spark_pipelines.transforms.parse import SEQ

    row = {"database": "", "table": "orders", "type": "ALTER", "sql": "ALTER TABLE shop.orders DROP COLUMN note",
           SEQ: {"ts": 1, "partition": 0, "offset": 0}}
    with pytest.raises(DDLError, match=r"ALTER TABLE shop\.orders DROP COLUMN note"):
        schema_changes([row])
    assert schema_changes([{**row, "database": "shop"}]) == [{**row, "database": "shop"}]
