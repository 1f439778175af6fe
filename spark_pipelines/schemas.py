"""The canal-JSON message schema and the mapping of MySQL column types to exact Spark types.

TiCDC writes every non-NULL value as a JSON string (tiflow `pkg/sink/codec/canal`): integers in
decimal, unsigned integers unsigned, floats in shortest round-trip form, DECIMAL as its digits,
DATE `YYYY-MM-DD`, DATETIME/TIMESTAMP `YYYY-MM-DD hh:mm:ss[.ffffff]` (TIMESTAMP in the changefeed's
time zone), TIME `[-]hhh:mm:ss[.ffffff]`, YEAR `YYYY`, BIT as the unsigned number, ENUM/SET/JSON as
text, and binary columns (BINARY, VARBINARY, BLOBs) as their bytes decoded as ISO-8859-1, so each
character is one byte. `mysqlType` names the type, with lengths when the changefeed runs TiCDC's
`content-compatible` form (`decimal(10,2)`) and without them otherwise (`decimal`).
"""

import re
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_pipelines.errors import SchemaError

_ROW = T.MapType(T.StringType(), T.StringType(), valueContainsNull=True)

CANAL_JSON_SCHEMA = T.StructType([
    T.StructField("id", T.LongType()),
    T.StructField("database", T.StringType()),
    T.StructField("table", T.StringType()),
    T.StructField("pkNames", T.ArrayType(T.StringType())),
    T.StructField("isDdl", T.BooleanType()),
    T.StructField("type", T.StringType()),
    T.StructField("es", T.LongType()),
    T.StructField("ts", T.LongType()),
    T.StructField("sql", T.StringType()),
    T.StructField("sqlType", T.MapType(T.StringType(), T.IntegerType())),
    T.StructField("mysqlType", T.MapType(T.StringType(), T.StringType())),
    T.StructField("data", T.ArrayType(_ROW)),
    T.StructField("old", T.ArrayType(_ROW)),
    T.StructField("_tidb", T.StructType([
        # commitTs is an unsigned 64-bit TSO; physical milliseconds << 18 stay below 2^63 until 2248.
        T.StructField("commitTs", T.LongType()),
        T.StructField("watermarkTs", T.LongType()),
        T.StructField("onlyHandleKey", T.BooleanType()),
        T.StructField("claimCheckLocation", T.StringType()),
        T.StructField("sessionTimeZone", T.StringType()),  # Lakefeed's, on DDL (changefeed/codec/canal_json.py)
    ])),
])
"""Explicit schema for `from_json`: values stay strings until `typed_value` converts them."""

_TYPE_RE = re.compile(
    r"^\s*(?P<name>[a-z]+)\s*(?:\((?P<args>[^)]*)\))?(?P<flags>(?:\s+(?:unsigned|signed|zerofill|binary))*)\s*$"
)

_SIGNED_INTS: dict[str, T.DataType] = {
    "tinyint": T.ByteType(), "smallint": T.ShortType(), "mediumint": T.IntegerType(),
    "int": T.IntegerType(), "integer": T.IntegerType(), "bigint": T.LongType(),
}
# One size up holds every unsigned value; BIGINT UNSIGNED needs all 20 digits.
_UNSIGNED_INTS: dict[str, T.DataType] = {
    "tinyint": T.ShortType(), "smallint": T.IntegerType(), "mediumint": T.IntegerType(),
    "int": T.LongType(), "integer": T.LongType(), "bigint": T.DecimalType(20, 0),
}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum", "set"}
_BINARIES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
# MySQL's zero dates have no Spark value; they become NULL (documented in docs/spark-pipelines.md).
_ZERO_DATE = "0000-00-00"


@dataclass(frozen=True)
class ColumnType:
    """One column's MySQL type as canal-JSON names it, and the Spark type that holds it exactly."""

    mysql_type: str
    kind: str  # how the text value converts: cast, binary, timestamp, zero_date_cast, enum, set
    spark_type: Any  # pyspark.sql.types.DataType (untyped library)
    elements: tuple[str, ...] = ()  # ENUM/SET members in definition order

    @property
    def sql(self) -> str:
        return str(self.spark_type.simpleString())


def column_type(mysql_type: str) -> ColumnType:
    """Map a `mysqlType` value to its Spark type; raise SchemaError for a type we cannot hold."""
    text = mysql_type.strip().lower()
    match = _TYPE_RE.match(text) if not text.startswith(("enum", "set")) else None
    if text.startswith(("enum(", "set(")):
        # TiCDC sends ENUM as its 1-based index and SET as its bitmask; the elements come with the
        # type under content-compatible=true, so the pipeline can restore MySQL's text.
        return ColumnType(mysql_type, "enum" if text.startswith("enum") else "set", T.StringType(),
                          _elements(mysql_type))
    if text in ("enum", "set"):
        return ColumnType(mysql_type, "cast", T.StringType())
    if match is None:
        raise SchemaError(f"cannot read mysqlType {mysql_type!r}: expected a MySQL type such as "
                          "'int', 'int unsigned', 'decimal(10,2)' or 'varchar(20)'")
    name, args = match["name"], match["args"]
    unsigned = "unsigned" in match["flags"] or "zerofill" in match["flags"]
    if name in _SIGNED_INTS:
        return ColumnType(mysql_type, "cast", (_UNSIGNED_INTS if unsigned else _SIGNED_INTS)[name])
    if name in ("decimal", "numeric"):
        return ColumnType(mysql_type, "cast", _decimal(mysql_type, args))
    if name == "float":
        return ColumnType(mysql_type, "cast", T.FloatType())
    if name in ("double", "real"):
        return ColumnType(mysql_type, "cast", T.DoubleType())
    if name == "bit":
        width = int(args) if args and args.strip().isdigit() else 64
        return ColumnType(mysql_type, "cast", T.LongType() if width < 64 else T.DecimalType(20, 0))
    if name == "year":
        return ColumnType(mysql_type, "cast", T.ShortType())
    if name == "date":
        return ColumnType(mysql_type, "zero_date_cast", T.DateType())
    if name == "datetime":
        return ColumnType(mysql_type, "zero_date_cast", T.TimestampNTZType())
    if name == "timestamp":
        return ColumnType(mysql_type, "timestamp", T.TimestampType())
    if name == "time":
        # MySQL TIME spans -838:59:59..838:59:59, beyond Spark's TIME (a time of day): keep the text.
        return ColumnType(mysql_type, "cast", T.StringType())
    if name in _TEXTS or (name in ("char", "varchar") and "binary" in match["flags"]):
        return ColumnType(mysql_type, "cast", T.StringType())
    if name in _BINARIES:
        return ColumnType(mysql_type, "binary", T.BinaryType())
    raise SchemaError(f"mysqlType {mysql_type!r} has no exact Spark type; supported: integers, decimal, "
                      "float, double, bit, year, date, datetime, timestamp, time, char/varchar/text, "
                      "json, enum, set, binary/varbinary/blob. Exclude the table or column in the config.")


def _decimal(mysql_type: str, args: str | None) -> Any:
    if not args:
        # Without lengths the precision is unknown: only text keeps every digit of any DECIMAL.
        raise SchemaError(f"mysqlType {mysql_type!r} carries no precision and scale, so no exact Spark "
                          "DECIMAL can be chosen; run the changefeed with content-compatible types "
                          "(mysqlType 'decimal(p,s)')")
    parts = [p.strip() for p in args.split(",")]
    precision, scale = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    if precision > 38:
        raise SchemaError(f"mysqlType {mysql_type!r}: Spark DECIMAL holds at most 38 digits, this column "
                          f"has {precision}; exclude the column or narrow it in MySQL")
    return T.DecimalType(precision, scale)


def _elements(mysql_type: str) -> tuple[str, ...]:
    inner = mysql_type[mysql_type.index("(") + 1 : mysql_type.rindex(")")]
    return tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", inner))


def _members(value: Column, ctype: ColumnType) -> Column:
    number = value.cast("long")
    if ctype.kind == "enum":
        # Index 0 is MySQL's '' for a value that was not a member.
        text = F.when(number == 0, F.lit("")).otherwise(
            F.element_at(F.array(*[F.lit(e) for e in ctype.elements]), number.cast("int")))
    else:
        text = F.concat_ws(",", *[F.when(number.bitwiseAND(1 << i) != 0, F.lit(e))
                                  for i, e in enumerate(ctype.elements)])
    # Text that is not a number (a producer that sends the member names) passes through unchanged.
    return F.when(value.rlike("^[0-9]+$"), text).otherwise(value)


def typed_value(value: Column, ctype: ColumnType, source_time_zone: str = "UTC") -> Column:
    """Convert a canal-JSON text value to its Spark type (NULL stays NULL; bad text fails the cast)."""
    if ctype.kind in ("enum", "set"):
        return _members(value, ctype)
    if ctype.kind == "binary":
        return F.encode(value, "ISO-8859-1")
    if ctype.kind == "timestamp":
        # The text is wall-clock time in the changefeed's zone; name the zone so the instant is exact.
        return F.when(value.startswith(_ZERO_DATE), F.lit(None).cast(ctype.spark_type)).otherwise(
            F.concat(value, F.lit(" " + source_time_zone)).cast(ctype.spark_type))
    if ctype.kind == "zero_date_cast":
        return F.when(value.startswith(_ZERO_DATE), F.lit(None).cast(ctype.spark_type)).otherwise(
            value.cast(ctype.spark_type))
    return value.cast(ctype.spark_type)
