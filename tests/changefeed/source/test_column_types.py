"""Type names from binlog metadata and information_schema (pure)."""

from changefeed.source.column_types import (
    InfoColumn,
    column_from_binlog,
    column_from_info,
    fits,
    merge_columns,
    mysql_type_name,
    parse_elements,
)
from changefeed.source.records import BinlogColumn, FieldType


def test_binlog_type_names() -> None:
    cases = [
        (BinlogColumn("a", FieldType.LONG, unsigned=True), "int unsigned"),
        (BinlogColumn("a", FieldType.NEWDECIMAL, precision=10, decimals=2), "decimal(10,2)"),
        (BinlogColumn("a", FieldType.VARCHAR, charset="utf8mb4", max_length=160), "varchar(40)"),
        (BinlogColumn("a", FieldType.VARCHAR, charset="latin1", max_length=40), "varchar(40)"),
        (BinlogColumn("a", FieldType.STRING, charset="binary", max_length=4), "binary(4)"),
        (BinlogColumn("a", FieldType.BLOB, charset="binary", length_size=3), "mediumblob"),
        (BinlogColumn("a", FieldType.BLOB, charset="utf8mb4", length_size=1), "tinytext"),
        (BinlogColumn("a", FieldType.ENUM, elements=("a", "it's")), "enum('a','it''s')"),
        (BinlogColumn("a", FieldType.DATETIME2, fsp=6), "datetime(6)"),
        (BinlogColumn("a", FieldType.TIMESTAMP2, fsp=0), "timestamp"),
        (BinlogColumn("a", FieldType.BIT, bits=10), "bit(10)"),
    ]
    for column, expected in cases:
        assert column_from_binlog(column).mysql_type == expected


def test_information_schema_names_drop_display_width() -> None:
    assert mysql_type_name("int(10) unsigned") == "int unsigned"
    assert mysql_type_name("tinyint(1)") == "tinyint"
    assert mysql_type_name("year(4)") == "year"
    assert mysql_type_name("decimal(10,2)") == "decimal(10,2)"
    assert parse_elements("enum('a','it''s','c,d')") == ("a", "it's", "c,d")


def test_merge_uses_information_schema_only_when_it_fits() -> None:
    binlog = (
        BinlogColumn("id", FieldType.LONG, nullable=False),
        BinlogColumn("j", FieldType.BLOB, charset="utf8mb4", length_size=4),
    )
    info = (
        InfoColumn("id", "int", "int(11)", False, None, None, None),
        InfoColumn("j", "longtext", "longtext", True, "utf8mb4", "utf8mb4_bin", 4294967295, is_json=True),
    )
    merged = merge_columns(binlog, info)
    assert [c.mysql_type for c in merged] == ["int", "json"]
    # information_schema from after a DROP COLUMN: not the binlog's columns, so ignored
    assert [c.mysql_type for c in merge_columns(binlog, info[:1])] == ["int", "longtext"]
    assert fits(merged, binlog)
    widened = (binlog[0], BinlogColumn("j", FieldType.VARCHAR, charset="utf8mb4", max_length=40))
    assert not fits(merged, widened)


def test_column_from_info() -> None:
    column = column_from_info(
        InfoColumn("e", "enum", "enum('a','b')", True, "utf8mb4", "utf8mb4_general_ci", 1)
    )
    assert column.elements == ("a", "b") and column.mysql_type == "enum('a','b')"
    decimal = column_from_info(InfoColumn("d", "decimal", "decimal(12,3) unsigned", False, None, None, None))
    assert (decimal.precision, decimal.scale, decimal.unsigned) == (12, 3, True)
