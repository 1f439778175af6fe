"""ALTER TABLE column clauses as the pipeline reads them (changefeed.ddl_parse column_edits, the type of a
definition) and the ADD COLUMN forms whose value in existing rows cannot be known (pure, no Spark)."""

import pytest

from changefeed.ddl_parse import (
    AddColumn,
    ColumnDefault,
    ColumnDefinition,
    DropColumn,
    ModifyColumn,
    RenameColumn,
    parse_ddl,
)
from spark_pipelines.errors import DDLError
from spark_pipelines.transforms.column_values import refuse_unknowable, spark_zone
from spark_pipelines.transforms.create_table import definition_type


def _edits(sql: str) -> list[object]:
    parsed = parse_ddl(sql, "shop")
    assert parsed is not None
    return list(parsed.column_edits)


def test_add_column_default_null_and_position() -> None:
    assert _edits("ALTER TABLE t ADD COLUMN s VARCHAR(12) NOT NULL DEFAULT 'new' AFTER `x`") == [AddColumn(
        ColumnDefinition("s", "s VARCHAR(12) NOT NULL DEFAULT 'new' AFTER `x`", False,
                         ColumnDefault("literal", "new", True), after="x"))]
    (first,) = _edits("alter table shop.t add c int unsigned first")
    assert isinstance(first, AddColumn) and first.column.first and first.column.nullable
    (stamp,) = _edits("ALTER TABLE t ADD IF NOT EXISTS ts TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3)")
    assert isinstance(stamp, AddColumn) and stamp.if_not_exists and stamp.column.default == ColumnDefault("now", "3")


def test_defaults_as_mysql_reads_them() -> None:
    sql = ("ALTER TABLE t ADD a INT DEFAULT -5, ADD b BOOL DEFAULT TRUE, ADD c BIT(3) DEFAULT b'101', "
           "ADD d DATE DEFAULT DATE '2020-01-02', ADD e VARCHAR(3) DEFAULT _utf8mb4'x', ADD f INT DEFAULT NULL, "
           "ADD g DATETIME DEFAULT NOW(), ADD h INT DEFAULT (1 + 2), ADD i VARCHAR(3) DEFAULT ('y')")
    defaults = {e.column.name: e.column.default for e in _edits(sql) if isinstance(e, AddColumn)}
    assert defaults == {
        "a": ColumnDefault("literal", "-5"), "b": ColumnDefault("literal", "1"), "c": ColumnDefault("literal", "5"),
        "d": ColumnDefault("literal", "2020-01-02", True), "e": ColumnDefault("literal", "x", True),
        "f": ColumnDefault("null"), "g": ColumnDefault("now", "0"), "h": ColumnDefault("expression", "(1 + 2)"),
        "i": ColumnDefault("literal", "y", True),
    }


def test_modify_change_drop_rename_in_statement_order() -> None:
    edits = _edits("ALTER TABLE t MODIFY f DOUBLE, CHANGE a b BIGINT AFTER c, DROP z, RENAME COLUMN x TO y, "
                   "ADD INDEX i (b)")
    assert [type(e) for e in edits] == [ModifyColumn, ModifyColumn, DropColumn, RenameColumn]
    assert isinstance(edits[1], ModifyColumn) and (edits[1].old, edits[1].column.name) == ("a", "b")
    assert edits[1].column.after == "c"
    # MariaDB's IF EXISTS and the parenthesised ADD list, which sqlglot does not parse.
    (change,) = _edits("ALTER TABLE t CHANGE COLUMN IF EXISTS a b INT FIRST")
    assert isinstance(change, ModifyColumn) and change.old == "a" and change.column.first
    added = _edits("ALTER TABLE t ADD COLUMN (a INT NOT NULL, b ENUM('x','y') DEFAULT 'y')")
    assert [e.column.name for e in added if isinstance(e, AddColumn)] == ["a", "b"]


def test_definition_types_use_the_rows_spelling() -> None:
    assert definition_type("f DOUBLE PRECISION").mysql_type == "double"
    assert definition_type("r REAL NOT NULL").mysql_type == "double"  # MySQL's REAL is DOUBLE
    assert definition_type("c INT UNSIGNED FIRST").mysql_type == "int unsigned"
    assert definition_type("d DEC(6,2) DEFAULT 1").spark_type.simpleString() == "decimal(6,2)"


@pytest.mark.parametrize("sql", [
    "ALTER TABLE t ADD n INT NOT NULL AUTO_INCREMENT UNIQUE",
    "ALTER TABLE t ADD g INT AS (a + 1) STORED",
    "ALTER TABLE t ADD h INT DEFAULT (a * 2)",
    "ALTER TABLE t ADD a NATIONAL VARCHAR(3) DEFAULT 'x'",  # a definition sqlglot cannot read
])
def test_values_the_binlog_does_not_tell_stop_the_query_naming_the_statement(sql: str) -> None:
    (edit,) = _edits(sql)
    assert isinstance(edit, AddColumn)
    with pytest.raises(DDLError, match="cannot") as error:
        refuse_unknowable(edit.column, sql)
    assert sql in str(error.value)


def test_session_zones_as_spark_names_them() -> None:
    assert [spark_zone(z) for z in ("-8:00", "+05:30", "-08:00", "Europe/Paris", "", None)] == [
        "-08:00", "+05:30", "-08:00", "Europe/Paris", None, None]
