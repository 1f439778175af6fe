"""CREATE TABLE text -> the table's columns in mysqlType spelling, Spark types and primary key."""

import pytest
from pyspark.sql import types as T

from spark_pipelines.transforms.create_table import created_shape, if_not_exists


def test_columns_types_and_key() -> None:
    shape = created_shape(
        "CREATE TABLE IF NOT EXISTS `shop`.`orders` (\n"
        "  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,\n"
        "  `total` DECIMAL(12, 2) DEFAULT '0.00' COMMENT 'a, b (c)',\n"
        "  qty INTEGER, ok BOOLEAN, price NUMERIC(5), ratio FLOAT(30), f FLOAT(7,2), d DOUBLE PRECISION,\n"
        "  state ENUM('new','paid (late)') NOT NULL, tags SET('a','b'), note TEXT CHARACTER SET utf8mb4,\n"
        "  raw VARCHAR(10) CHARACTER SET binary, at DATETIME(6), ts TIMESTAMP NULL, day DATE, y YEAR, b BIT(3),\n"
        "  PRIMARY KEY (id), KEY by_state (state(3)), CONSTRAINT c CHECK (qty > 0)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", "other")
    assert shape is not None
    assert (shape.database, shape.table, shape.primary_key) == ("shop", "orders", ("id",))
    types = {name: (c.mysql_type, c.spark_type) for name, c in shape.columns}
    assert types == {
        "id": ("bigint unsigned", T.DecimalType(20, 0)),
        "total": ("decimal(12,2)", T.DecimalType(12, 2)),
        "qty": ("int", T.IntegerType()),
        "ok": ("tinyint(1)", T.ByteType()),
        "price": ("decimal(5,0)", T.DecimalType(5, 0)),
        "ratio": ("double", T.DoubleType()),
        "f": ("float", T.FloatType()),
        "d": ("double", T.DoubleType()),
        "state": ("enum('new','paid (late)')", T.StringType()),
        "tags": ("set('a','b')", T.StringType()),
        "note": ("text", T.StringType()),
        "raw": ("varbinary(10)", T.BinaryType()),
        "at": ("datetime(6)", T.TimestampNTZType()),
        "ts": ("timestamp", T.TimestampType()),
        "day": ("date", T.DateType()),
        "y": ("year", T.ShortType()),
        "b": ("bit(3)", T.LongType()),
    }
    assert shape.columns[0][0] == "id" and shape.columns[-1][0] == "b"


def test_composite_and_inline_keys() -> None:
    composite = created_shape("create table t (a int, b varchar(5), primary key using btree (a, `b`(2)))", "db")
    assert composite is not None and composite.primary_key == ("a", "b") and composite.database == "db"
    inline = created_shape("CREATE TABLE t (a INT UNSIGNED PRIMARY KEY, b DECIMAL)", "db")
    assert inline is not None and inline.primary_key == ("a",)
    assert [c.mysql_type for _, c in inline.columns] == ["int unsigned", "decimal(10,0)"]


def test_without_a_primary_key_the_first_unique_key_of_not_null_columns_is_the_key() -> None:
    """The handle key the changefeed keys such a table's rows by (TiCDC's rule); MariaDB's SHOW CREATE TABLE."""
    shown = created_shape("CREATE TABLE `uniq` (\n  `id` int(11) NOT NULL,\n  `tag` varchar(10) NOT NULL,\n"
                          "  `note` varchar(30) DEFAULT NULL,\n  UNIQUE KEY `u_note` (`note`),\n"
                          "  UNIQUE KEY `uk_uniq` (`id`,`tag`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", "db")
    assert shown is not None and shown.primary_key == ("id", "tag")  # u_note has a nullable column
    inline = created_shape("create table t (a int, b int not null unique, constraint c unique index (a))", "db")
    assert inline is not None and inline.primary_key == ("b",)


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t LIKE s",
    "CREATE TABLE t (a INT, b INT, UNIQUE KEY (a, b))",  # nullable unique key columns: no handle key
    "CREATE TABLE t (a INT PRIMARY KEY) SELECT 1 AS a",
    "CREATE TABLE t (a INT, b INT)",  # no primary key: the pipeline cannot merge it anyway
    "CREATE TABLE t (a INT PRIMARY KEY, b INT AS (a + 1))",  # generated column
    "CREATE TABLE t (a INT PRIMARY KEY, g GEOMETRY)",  # no exact Spark type
    "ALTER TABLE t ADD COLUMN a INT",
])
def test_unsure_statements_give_none(sql: str) -> None:
    assert created_shape(sql, "db") is None


def test_if_not_exists_is_read_as_mysql_reads_the_statement() -> None:
    assert if_not_exists("create table if  not exists t (a int primary key)")
    assert if_not_exists("CREATE TABLE /*!32312 IF NOT EXISTS*/ `t` (a int primary key)")
    assert not if_not_exists("CREATE TABLE `t` (`a` int primary key, c varchar(20) DEFAULT 'if not exists')")
    assert not if_not_exists("CREATE TABLE /* IF NOT EXISTS */ t (a int primary key)")
