"""TiCDC table-filter syntax and event filters, on pure values."""

import pytest

from changefeed.errors import ConfigError
from changefeed.filter import ChangeFilter, EventFilterRule, TableFilter
from changefeed.model import DDLEvent, DDLKind, Position, TableName

HERE = Position("binlog.000001", 4)


def t(name: str) -> TableName:
    schema, table = name.split(".", 1)
    return TableName(schema, table)


@pytest.mark.parametrize(
    ("rules", "table", "kept"),
    [
        (["*.*"], "shop.orders", True),
        (["shop.*"], "shop.orders", True),
        (["shop.*"], "crm.orders", False),
        (["shop.order?"], "shop.orders", True),
        (["shop.order?"], "shop.order", False),
        (["shop.[a-c]*"], "shop.books", True),
        (["shop.[a-c]*"], "shop.dvds", False),
        (["shop.[!a-c]*"], "shop.dvds", True),
        (["*.*", "!shop.tmp_*"], "shop.tmp_1", False),
        (["*.*", "!shop.tmp_*"], "shop.orders", True),
        # The last matching rule decides: a later include wins over an earlier exclusion.
        (["*.*", "!shop.*", "shop.keep"], "shop.keep", True),
        (["*.*", "!shop.*", "shop.keep"], "shop.drop", False),
        # Case-insensitive by default, like TiCDC.
        (["SHOP.Orders"], "shop.orders", True),
        # Quoted and escaped names: the dot inside belongs to the table name.
        (["`db`.`a.b`"], "db.a.b", True),
        (['"db"."a.b"'], "db.a.b", True),
        (["db.a\\.b"], "db.a.b", True),
        (["db.a\\.b"], "db.aXb", False),
        # System schemas are never captured, whatever the rules say.
        (["*.*"], "mysql.user", False),
        (["mysql.*"], "mysql.user", False),
    ],
)
def test_table_filter_rules(rules: list[str], table: str, kept: bool) -> None:
    assert TableFilter(rules).matches(t(table)) is kept


def test_case_sensitive_filter_needs_exact_case() -> None:
    assert not TableFilter(["SHOP.orders"], case_sensitive=True).matches(t("shop.orders"))
    assert TableFilter(["shop.orders"], case_sensitive=True).matches(t("shop.orders"))


def test_schema_level_questions_for_database_ddl() -> None:
    tables = TableFilter(["shop.*", "!crm.*"])
    assert tables.matches_schema("shop")
    assert not tables.matches_schema("crm")
    assert not tables.matches_schema("information_schema")


@pytest.mark.parametrize("bad", ["noschema", "shop.[a-", "shop.", "`shop.t"])
def test_bad_rules_are_config_errors_naming_the_rule(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        TableFilter([bad])
    assert repr(bad) in str(info.value)


def test_blank_lines_and_comments_are_ignored_as_in_filter_files() -> None:
    tables = TableFilter(["# only the shop", "", "shop.*"])
    assert tables.matches(t("shop.a"))
    assert not tables.matches(t("crm.a"))


def ddl(sql: str, kind: DDLKind, *tables: str, database: str = "shop") -> DDLEvent:
    return DDLEvent(sql, kind, database, tuple(t(n) for n in tables), 1, HERE)


def test_event_filter_drops_ddl_by_type_and_sql_only_for_matched_tables() -> None:
    keep = ChangeFilter(
        TableFilter(["shop.*"]),
        (
            EventFilterRule(matcher=["shop.logs"], ignore_event=["truncate table"]),
            EventFilterRule(matcher=["shop.*"], ignore_sql=["^ALTER TABLE \\S+ ADD INDEX"]),
        ),
    )
    assert not keep.keeps_ddl(ddl("TRUNCATE TABLE logs", DDLKind.TRUNCATE_TABLE, "shop.logs"))
    assert keep.keeps_ddl(ddl("TRUNCATE TABLE orders", DDLKind.TRUNCATE_TABLE, "shop.orders"))
    assert not keep.keeps_ddl(ddl("alter table orders add index (a)", DDLKind.ALTER_TABLE, "shop.orders"))
    assert keep.keeps_ddl(ddl("ALTER TABLE orders ADD COLUMN b INT", DDLKind.ALTER_TABLE, "shop.orders"))
    # A table the table filter drops never reaches event filters.
    assert not keep.keeps_ddl(ddl("CREATE TABLE crm.x (a INT)", DDLKind.CREATE_TABLE, "crm.x", database="crm"))
    # Database DDL is kept when any table of the schema could match.
    assert keep.keeps_ddl(ddl("CREATE DATABASE shop", DDLKind.CREATE_DATABASE))
    assert not keep.keeps_ddl(ddl("CREATE DATABASE crm", DDLKind.CREATE_DATABASE, database="crm"))
    # Statements that touch no table (users, views) are not something a table sink applies.
    assert not keep.keeps_ddl(ddl("CREATE USER x", DDLKind.OTHER))


def test_unknown_event_type_and_bad_regex_are_clear_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"unknown ignore-event type.*'upsert'"):
        EventFilterRule(ignore_event=["upsert"])
    with pytest.raises(ConfigError, match="ignore-sql pattern is not a valid regular expression"):
        EventFilterRule(ignore_sql=["(unclosed"])
