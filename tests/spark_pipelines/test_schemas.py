"""mysqlType -> Spark type mapping (pure) and text -> typed value conversion (one Spark query)."""

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_pipelines.errors import SchemaError
from spark_pipelines.schemas import column_type, typed_value

MAPPING = {
    "tinyint": "tinyint", "tinyint(1)": "tinyint", "tinyint unsigned": "smallint",
    "smallint": "smallint", "smallint unsigned": "int", "mediumint": "int", "mediumint(8) unsigned": "int",
    "int": "int", "int(11)": "int", "int unsigned": "bigint", "int(10) unsigned zerofill": "bigint",
    "bigint": "bigint", "bigint unsigned": "decimal(20,0)", "bigint(20) unsigned": "decimal(20,0)",
    "decimal(10,2)": "decimal(10,2)", "decimal(5)": "decimal(5,0)",
    "decimal(38,10) unsigned": "decimal(38,10)",
    "float": "float", "float unsigned": "float", "double": "double", "double(26,3)": "double",
    "bit(1)": "bigint", "bit(63)": "bigint", "bit(64)": "decimal(20,0)", "bit": "decimal(20,0)",
    "year": "smallint", "year(4)": "smallint", "date": "date", "datetime": "timestamp_ntz",
    "datetime(6)": "timestamp_ntz", "timestamp": "timestamp", "timestamp(3)": "timestamp", "time": "string",
    "time(3)": "string", "char": "string", "char(10)": "string", "varchar(255)": "string", "text": "string",
    "tinytext": "string", "mediumtext": "string", "longtext": "string", "json": "string", "enum": "string",
    "enum('a','b')": "string", "set('x','y')": "string", "binary(16)": "binary", "varbinary(20)": "binary",
    "blob": "binary", "tinyblob": "binary", "mediumblob": "binary", "longblob": "binary",
    "VARCHAR(3)": "string",
}


@pytest.mark.parametrize(("mysql_type", "spark_type"), MAPPING.items())
def test_mysql_type_maps_to_exact_spark_type(mysql_type: str, spark_type: str) -> None:
    assert column_type(mysql_type).sql == spark_type


@pytest.mark.parametrize(("mysql_type", "fragment"), [
    ("decimal", "content-compatible"), ("decimal(65,2)", "at most 38"), ("geometry", "no exact Spark type"),
    ("int(", "cannot read mysqlType"), ("vector(3)", "Exclude the table"),
])
def test_unmappable_types_fail_with_a_clear_error(mysql_type: str, fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment.replace("(", r"\(")):
        column_type(mysql_type)


# (mysqlType, canal-JSON text as TiCDC writes it, expected Python value)
VALUES: list[tuple[str, str | None, Any]] = [
    ("tinyint", "-128", -128), ("tinyint unsigned", "255", 255), ("smallint unsigned", "65535", 65535),
    ("int", "-2147483648", -2147483648), ("int unsigned", "4294967295", 4294967295),
    ("bigint", "-9223372036854775808", -9223372036854775808),
    ("bigint unsigned", "18446744073709551615", Decimal("18446744073709551615")),
    ("decimal(10,2)", "-12345678.91", Decimal("-12345678.91")), ("float", "3.14", 3.140000104904175),
    ("double", "2.718281828459045", 2.718281828459045), ("bit(8)", "65", 65), ("year", "2155", 2155),
    ("date", "2024-02-29", dt.date(2024, 2, 29)), ("date", "0000-00-00", None),
    ("datetime(6)", "2024-02-29 23:59:59.123456", dt.datetime(2024, 2, 29, 23, 59, 59, 123456)),
    ("datetime", "0000-00-00 00:00:00", None),
    # TIMESTAMP text is wall-clock in the changefeed zone (here Asia/Shanghai, UTC+8).
    ("timestamp", "2024-03-01 08:00:00", dt.datetime(2024, 3, 1, tzinfo=dt.UTC)),
    ("time", "-838:59:59", "-838:59:59"), ("varchar(20)", "héllo ✓", "héllo ✓"),
    ("json", '{"a": [1, 2]}', '{"a": [1, 2]}'), ("enum('a','b')", "b", "b"), ("set('x','y')", "x,y", "x,y"),
    ("enum('a','b','c d')", "3", "c d"), ("enum('a','it''s')", "2", "it's"), ("enum('a')", "0", ""),
    ("set('x','y','z')", "5", "x,z"), ("set('x','y')", "0", ""),
    # Binary bytes 0x00 0xff 0x80 'a' arrive as ISO-8859-1 text.
    ("varbinary(8)", "\x00\xff\x80a", bytes([0, 0xFF, 0x80, 0x61])), ("blob", "", b""),
    ("int", None, None),
]


def test_text_values_convert_to_typed_values(spark: Any) -> None:
    texts = spark.createDataFrame([tuple(text for _, text, _ in VALUES)],
                                  ", ".join(f"c{i} STRING" for i in range(len(VALUES))))
    typed = texts.select(*[
        typed_value(F.col(f"c{i}"), column_type(mysql_type), "Asia/Shanghai").alias(f"c{i}")
        for i, (mysql_type, _, _) in enumerate(VALUES)
    ])
    expected_schema = ", ".join(f"c{i} {column_type(t).sql}" for i, (t, _, _) in enumerate(VALUES))
    expected = spark.createDataFrame([Row(*[value for _, _, value in VALUES])], expected_schema)
    assertDataFrameEqual(typed, expected)
