"""The value MySQL gives the existing rows of a table when ALTER TABLE adds a column (pure).

MySQL manual 13.6 "Data Type Default Values": an added column takes its DEFAULT in every existing row
(a constant; CURRENT_TIMESTAMP and its synonyms, which the statement evaluates once, at its start: the
DDL's binlog time, whole seconds); a nullable column without DEFAULT takes NULL; a NOT NULL column
without DEFAULT takes the type's implicit default: 0 for numbers, '' for strings, the first member for
ENUM, the "zero" value for dates and times (which Delta holds as NULL, as for rows), 0x00 bytes filling
BINARY(n). TIMESTAMP columns follow `explicit_defaults_for_timestamp=ON` (the default of MySQL 8.0 and
MariaDB 10.10): no automatic CURRENT_TIMESTAMP. Values MySQL computes per row (AUTO_INCREMENT,
generated columns) or from an expression cannot be known here: DDLError.
"""

from __future__ import annotations

import datetime
import re

from pyspark.sql import Column
from pyspark.sql import functions as F

from changefeed.ddl_parse import ColumnDefinition
from spark_pipelines.errors import DDLError
from spark_pipelines.schemas import ColumnType, typed_value

_FIXED_BINARY = re.compile(r"^binary\((\d+)\)")
_CHAR = re.compile(r"^char\(")
_TIME = re.compile(r"^time(?:\((\d)\))?$")
_INTEGRAL = ("tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year")
_OFFSET = re.compile(r"^([+-])(\d{1,2}):(\d{2})$")


def spark_zone(mysql_zone: str | None) -> str | None:
    """A session time zone as the binlog names it, as Spark names it: a UTC offset with two-digit hours
    (MySQL accepts `-8:00`, Spark wants `-08:00`), a named zone as it is; None when absent."""
    if not mysql_zone:
        return None
    offset = _OFFSET.match(mysql_zone)
    return f"{offset[1]}{int(offset[2]):02d}:{offset[3]}" if offset else mysql_zone


def existing_value(column: ColumnDefinition, ctype: ColumnType, commit_ms: int, statement: str,
                   source_time_zone: str = "UTC") -> Column | None:
    """The value of `column` in rows that existed when the ALTER TABLE committed at `commit_ms`
    (unix milliseconds); None for NULL."""
    refuse_unknowable(column, statement)
    default = column.default
    if default.kind == "null" or (default.kind == "none" and column.nullable):
        return None
    if default.kind == "now":
        return _now(ctype, commit_ms, column.name, statement, source_time_zone)
    if default.kind == "none":
        return _implicit(ctype)
    return _literal(default.value or "", default.is_string, ctype, source_time_zone)


def refuse_unknowable(column: ColumnDefinition, statement: str) -> None:
    """DDLError, naming the statement, for an added column whose value in existing rows is not known
    from the binlog."""
    default = column.default
    if default.kind == "unreadable":
        raise DDLError(f"cannot read the definition of the column {column.name!r} that ALTER TABLE adds "
                       f"({default.value!r}), so not the value existing rows take: {statement[:300]!r}. Exclude "
                       "the table (tables.exclude), or report the statement so the DDL reader learns its form")
    if column.computed or default.kind == "expression":
        what = "computed per row (AUTO_INCREMENT or generated)" if column.computed else \
            f"the expression DEFAULT {default.value}"
        raise DDLError(f"ALTER TABLE adds column {column.name!r} whose value in existing rows is {what}, which "
                       f"the pipeline cannot compute: {statement[:300]!r}. Exclude the table (tables.exclude), or "
                       "stop the pipeline and rebuild the Delta table from a copy of the MySQL table")


def _now(ctype: ColumnType, commit_ms: int, name: str, statement: str, zone: str) -> Column:
    seconds = commit_ms // 1000  # the binlog records whole seconds; MySQL's NOW() is the statement's start
    if ctype.kind == "timestamp":
        return F.timestamp_seconds(F.lit(seconds))
    if ctype.mysql_type.startswith("datetime"):
        utc = datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
        return F.convert_timezone(F.lit("UTC"), F.lit(zone), F.lit(utc).cast("timestamp_ntz"))
    raise DDLError(f"column {name!r} of type {ctype.mysql_type} cannot default to CURRENT_TIMESTAMP in MySQL: "
                   f"{statement[:300]!r}")


def _implicit(ctype: ColumnType) -> Column | None:
    mysql_type = ctype.mysql_type.lower()
    if ctype.kind == "enum":
        return F.lit(ctype.elements[0] if ctype.elements else "")
    if ctype.kind in ("timestamp", "zero_date_cast"):
        return None  # the zero date, which Delta holds as NULL
    if ctype.kind == "binary":
        return _binary("", mysql_type)
    if time := _TIME.match(mysql_type):
        digits = int(time.group(1) or 0)
        return F.lit("00:00:00" + ("." + "0" * digits if digits else ""))
    if ctype.spark_type.typeName() == "string":
        return F.lit("")
    return F.lit("0").cast(ctype.spark_type)


def _literal(text: str, is_string: bool, ctype: ColumnType, zone: str) -> Column:
    mysql_type = ctype.mysql_type.lower()
    if ctype.kind in ("enum", "set") and is_string:
        if ctype.kind == "set":  # MySQL stores a SET's members in definition order
            members = set(text.split(",")) if text else set()
            text = ",".join(e for e in ctype.elements if e in members)
        return F.lit(text)
    if ctype.kind == "binary":
        return _binary(text, mysql_type)
    if _CHAR.match(mysql_type):
        return F.lit(text.rstrip(" "))  # CHAR values are read back without trailing spaces
    if mysql_type.split("(")[0].split()[0] in _INTEGRAL and re.search(r"[.eE]", text):
        # MySQL rounds a fractional constant for an integer column (half away from zero, as HALF_UP).
        return F.round(F.lit(text).cast("decimal(38,10)")).cast(ctype.spark_type)
    return typed_value(F.lit(text), ctype, zone)


def _binary(text: str, mysql_type: str) -> Column:
    data = text.encode("utf-8")  # the statement's text in the connection's character set
    fixed = _FIXED_BINARY.match(mysql_type)
    if fixed:  # BINARY(n) pads with 0x00 to its length
        data = data.ljust(int(fixed.group(1)), b"\x00")
    return F.lit(bytearray(data)).cast("binary")
