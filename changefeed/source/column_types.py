"""Column type names, from the binlog's TABLE_MAP metadata or from information_schema (pure).

The binlog knows names, type codes, signedness, charsets, enum/set members, nullability and the
primary key, but not e.g. that a MariaDB LONGTEXT is really JSON or which unique indexes exist;
information_schema knows those but only for the schema in force *now*. `merge_columns` uses the
information_schema row only when it describes the same columns as the binlog.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from changefeed.model import Column
from changefeed.source.records import BinlogColumn, FieldType

_INTEGER_NAMES = {
    FieldType.TINY: "tinyint",
    FieldType.SHORT: "smallint",
    FieldType.INT24: "mediumint",
    FieldType.LONG: "int",
    FieldType.LONGLONG: "bigint",
}
_BLOB_NAMES = {1: "tiny", 2: "", 3: "medium", 4: "long"}
_MAX_BYTES_PER_CHAR = {
    "utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "utf16": 4, "utf16le": 4, "utf32": 4,
    "gbk": 2, "gb2312": 2, "big5": 2, "sjis": 2, "cp932": 2, "euckr": 2, "ujis": 3, "eucjpms": 3,
    "gb18030": 4,
}
_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|integer|bigint|year)\(\d+\)")


def charset_of_collation(collation: str | None) -> str | None:
    if collation is None:
        return None
    return "binary" if collation == "binary" else collation.split("_", 1)[0]


def column_from_binlog(col: BinlogColumn) -> Column:
    """A Column whose type name is reconstructed from binlog metadata alone."""
    data_type, mysql_type, length = _binlog_type_name(col)
    return Column(
        name=col.name,
        data_type=data_type,
        mysql_type=mysql_type,
        unsigned=col.unsigned,
        nullable=col.nullable,
        charset=col.charset,
        collation=col.collation,
        length=length,
        precision=col.precision,
        scale=col.decimals,
        fsp=col.fsp,
        elements=col.elements,
    )


def _binlog_type_name(col: BinlogColumn) -> tuple[str, str, int | None]:
    code = col.type_code
    unsigned = " unsigned" if col.unsigned else ""
    binary = col.charset == "binary"
    if code in _INTEGER_NAMES:
        return _INTEGER_NAMES[code], _INTEGER_NAMES[code] + unsigned, None
    if code == FieldType.NEWDECIMAL:
        return "decimal", f"decimal({col.precision},{col.decimals}){unsigned}", None
    if code in (FieldType.FLOAT, FieldType.DOUBLE):
        name = "float" if code == FieldType.FLOAT else "double"
        return name, name + unsigned, None
    if code == FieldType.YEAR:
        return "year", "year", None
    if code == FieldType.BIT:
        return "bit", f"bit({col.bits})", col.bits
    if code in (FieldType.DATE, FieldType.NEWDATE):
        return "date", "date", None
    if code in (FieldType.DATETIME, FieldType.DATETIME2, FieldType.TIMESTAMP, FieldType.TIMESTAMP2,
                FieldType.TIME, FieldType.TIME2):
        name = {FieldType.DATETIME: "datetime", FieldType.DATETIME2: "datetime", FieldType.TIME: "time",
                FieldType.TIME2: "time"}.get(code, "timestamp")
        return name, f"{name}({col.fsp})" if col.fsp else name, None
    if code in (FieldType.ENUM, FieldType.SET):
        name = "enum" if code == FieldType.ENUM else "set"
        members = ",".join("'" + e.replace("'", "''") + "'" for e in col.elements)
        return name, f"{name}({members})", None
    if code in (FieldType.VARCHAR, FieldType.VAR_STRING, FieldType.STRING):
        name = ("varbinary" if binary else "varchar") if code != FieldType.STRING else (
            "binary" if binary else "char")
        length = (col.max_length or 0) // _MAX_BYTES_PER_CHAR.get(col.charset or "", 1)
        return name, f"{name}({length})", length
    if code in (FieldType.BLOB, FieldType.TINY_BLOB, FieldType.MEDIUM_BLOB, FieldType.LONG_BLOB):
        name = _BLOB_NAMES.get(col.length_size or 2, "") + ("blob" if binary else "text")
        return name, name, None
    if code == FieldType.JSON:
        return "json", "json", None
    if code == FieldType.GEOMETRY:
        return "geometry", "geometry", None
    return "unknown", f"unknown({code})", None


@dataclass(frozen=True)
class InfoColumn:
    """One row of information_schema.COLUMNS (only the fields we use)."""

    name: str
    data_type: str
    column_type: str
    nullable: bool
    charset: str | None
    collation: str | None
    char_length: int | None
    is_json: bool = False  # MariaDB: LONGTEXT with a json_valid() check
    virtual: bool = False  # EXTRA says VIRTUAL GENERATED (MySQL and MariaDB spell it alike)


def mysql_type_name(column_type: str) -> str:
    return _DISPLAY_WIDTH.sub(r"\1", column_type.lower()).replace("integer", "int")


_COMPATIBLE = {
    "tinyint": {FieldType.TINY}, "smallint": {FieldType.SHORT}, "mediumint": {FieldType.INT24},
    "int": {FieldType.LONG}, "bigint": {FieldType.LONGLONG}, "decimal": {FieldType.NEWDECIMAL},
    "float": {FieldType.FLOAT}, "double": {FieldType.DOUBLE}, "bit": {FieldType.BIT},
    "year": {FieldType.YEAR}, "date": {FieldType.DATE, FieldType.NEWDATE},
    "datetime": {FieldType.DATETIME, FieldType.DATETIME2},
    "timestamp": {FieldType.TIMESTAMP, FieldType.TIMESTAMP2}, "time": {FieldType.TIME, FieldType.TIME2},
    "enum": {FieldType.ENUM}, "set": {FieldType.SET},
    "char": {FieldType.STRING}, "binary": {FieldType.STRING},
    "varchar": {FieldType.VARCHAR, FieldType.VAR_STRING},
    "varbinary": {FieldType.VARCHAR, FieldType.VAR_STRING},
    "json": {FieldType.JSON, FieldType.BLOB},
}
_BLOBS = {FieldType.BLOB, FieldType.TINY_BLOB, FieldType.MEDIUM_BLOB, FieldType.LONG_BLOB}


def info_matches(binlog: Sequence[BinlogColumn], info: Sequence[InfoColumn]) -> bool:
    """Does this information_schema description fit the binlog's columns (same names, types)?"""
    if len(binlog) != len(info):
        return False
    for b, i in zip(binlog, info, strict=True):
        if b.name.lower() != i.name.lower() or b.nullable != i.nullable:
            return False
        allowed = _COMPATIBLE.get(i.data_type)
        if allowed is None:
            allowed = _BLOBS if i.data_type.endswith(("blob", "text")) else set()
        if b.type_code not in allowed and not (b.type_code in _BLOBS and i.data_type == "json"):
            return False
    return True


def merge_columns(binlog: Sequence[BinlogColumn], info: Sequence[InfoColumn] | None) -> tuple[Column, ...]:
    """Columns from the binlog, refined by information_schema when it describes the same columns."""
    columns = [column_from_binlog(b) for b in binlog]
    if info is None or not info_matches(binlog, info):
        return tuple(columns)
    return tuple(refine(c, i) for c, i in zip(columns, info, strict=True))


def _server_facts(info: InfoColumn, column: Column) -> Column:
    """What only information_schema knows: the full COLUMN_TYPE (canal-JSON's content-compatible
    mysqlType), ZEROFILL and whether the column is a virtual generated one."""
    column_type = "json" if info.is_json else info.column_type  # verbatim: enum members keep their case
    return replace(column, column_type=column_type, zerofill=" zerofill" in column_type.lower(),
                   virtual=info.virtual)


def refine(column: Column, info: InfoColumn) -> Column:
    if info.is_json or info.data_type == "json":
        return _server_facts(info, replace(column, data_type="json", mysql_type="json", length=None, charset=None,
                                           collation=None))
    length = column.length if info.char_length is None else info.char_length
    if column.data_type == "bit":
        length = column.length
    return _server_facts(info, replace(column, data_type=info.data_type,
                                       mysql_type=mysql_type_name(info.column_type), length=length))


def column_from_info(info: InfoColumn) -> Column:
    """A Column from information_schema alone (snapshot of a table the binlog has not shown yet)."""
    mysql_type = "json" if info.is_json else mysql_type_name(info.column_type)
    data_type = "json" if info.is_json else info.data_type
    precision = scale = fsp = None
    match = re.search(r"\((\d+)(?:,(\d+))?\)", mysql_type)
    if match and data_type == "decimal":
        precision, scale = int(match.group(1)), int(match.group(2) or 0)
    elif data_type in ("datetime", "timestamp", "time"):
        fsp = int(match.group(1)) if match else 0
    length = info.char_length
    if data_type == "bit" and match:
        length = int(match.group(1))
    return _server_facts(info, Column(
        name=info.name, data_type=data_type, mysql_type=mysql_type, unsigned=" unsigned" in mysql_type,
        nullable=info.nullable, charset=None if data_type == "json" else info.charset,
        collation=info.collation, length=None if data_type == "json" else length,
        precision=precision, scale=scale, fsp=fsp,
        elements=parse_elements(info.column_type) if data_type in ("enum", "set") else (),
    ))


def parse_elements(column_type: str) -> tuple[str, ...]:
    """Members of `enum('a','b')` / `set('x','y')` as information_schema spells them."""
    inner = column_type[column_type.index("(") + 1: column_type.rindex(")")]
    return tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", inner))


_SIZED = {"char", "varchar", "binary", "varbinary", "bit"}


def fits(columns: Sequence[Column], binlog: Sequence[BinlogColumn]) -> bool:
    """Can rows described by these TABLE_MAP columns be read with this schema version?"""
    if len(columns) != len(binlog):
        return False
    for column, b in zip(columns, binlog, strict=True):
        derived = column_from_binlog(b)
        if (column.name != derived.name or column.nullable != derived.nullable
                or column.unsigned != derived.unsigned or column.precision != derived.precision
                or column.scale != derived.scale or (column.fsp or 0) != (derived.fsp or 0)
                or column.elements != derived.elements):
            return False
        if column.data_type != derived.data_type and not (
                column.data_type == "json" and derived.data_type in ("longtext", "json")):
            return False
        if column.data_type in _SIZED and column.length != derived.length:
            return False
    return True
