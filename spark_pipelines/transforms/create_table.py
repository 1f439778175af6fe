"""The columns, types and key of a CREATE TABLE statement's text (pure; not a full SQL parser).

canal-JSON DDL messages carry only the SQL, no column types. For the common form
`CREATE TABLE t (col type [attributes], ..., PRIMARY KEY (...))` the pipeline reads each column's
type into the `mysqlType` spelling rows use (`decimal(10,2)`, `int unsigned`, `enum('a','b')`) so the
Delta table exists, with the right types, before its first row. Anything this reader is not sure
about (CREATE ... LIKE / SELECT, generated columns, types without an exact Spark type, no key) gives None: the
table then appears with its first row, as before. The key is the primary key, else the first unique key whose
columns are all NOT NULL (the handle key TiCDC and the changefeed key such a table's rows by).
"""

from __future__ import annotations

import re

from changefeed.ddl_parse import executable_sql
from changefeed.errors import DDLParseError
from spark_pipelines.errors import SchemaError
from spark_pipelines.schemas import ColumnType, column_type
from spark_pipelines.transforms.rows import TableShape

_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_HEAD = re.compile(rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+(?P<if_not_exists>IF\s+NOT\s+EXISTS\s+)?"
                   rf"(?P<first>{_NAME})(?:\s*\.\s*(?P<second>{_NAME}))?\s*\(", re.IGNORECASE)
_COLUMN = re.compile(rf"^({_NAME})\s+(?P<type>[a-z][a-z0-9]*(?:\s+(?:varying|precision))?)\s*", re.IGNORECASE)
_FLAGS = re.compile(r"^\s*((?:(?:unsigned|signed|zerofill)\s*)*)", re.IGNORECASE)
_TABLE_CLAUSE = re.compile(r"^(?:CONSTRAINT\b|PRIMARY\s+KEY|UNIQUE\b|KEY\b|INDEX\b|FULLTEXT\b|SPATIAL\b|FOREIGN\b|"
                           r"CHECK\b|PERIOD\b)", re.IGNORECASE)
_PRIMARY = re.compile(r"^(?:CONSTRAINT\s+(?:" + _NAME + r"\s+)?)?PRIMARY\s+KEY\s*(?:USING\s+\w+\s*)?\((.*)\)",
                      re.IGNORECASE | re.DOTALL)
_UNIQUE = re.compile(r"^(?:CONSTRAINT\s+(?:" + _NAME + r"\s+)?)?UNIQUE\s+(?:KEY\s+|INDEX\s+)?(?:" + _NAME +
                     r"\s*)?(?:USING\s+\w+\s*)?\((.*)\)", re.IGNORECASE | re.DOTALL)
_NOT_NULL = re.compile(r"\bNOT\s+NULL\b", re.IGNORECASE)
_GENERATED = re.compile(r"\b(?:GENERATED\s+ALWAYS|AS\s*\()", re.IGNORECASE)
_BINARY_CHARSET = re.compile(r"\b(?:CHARACTER\s+SET|CHARSET)\s*=?\s*'?binary\b", re.IGNORECASE)
_SYNONYMS = {
    "integer": "int", "int1": "tinyint", "int2": "smallint", "int3": "mediumint", "int4": "int",
    "int8": "bigint", "middleint": "mediumint", "dec": "decimal", "numeric": "decimal", "fixed": "decimal",
    "real": "double", "double precision": "double", "character": "char", "character varying": "varchar",
    "nchar": "char", "nvarchar": "varchar", "long": "mediumtext",
}
_AS_BINARY = {"char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob",
              "mediumtext": "mediumblob", "longtext": "longblob"}


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def split_clauses(body: str) -> list[str]:
    """A column list split at top-level commas, so DECIMAL(10,2) and ENUM('a,b') stay whole."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in body:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _parenthesised(text: str) -> tuple[str | None, str]:
    """`(args) rest` -> (args, rest); quotes may hold parentheses (ENUM members)."""
    if not text.startswith("("):
        return None, text
    depth, quote = 0, ""
    for index, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[1:index], text[index + 1:]
    return None, text


def _mysql_type(name: str, args: str | None, flags: str, rest: str) -> str:
    """The mysqlType spelling a row of this column would carry."""
    name = _SYNONYMS.get(" ".join(name.lower().split()), name.lower())
    if name in ("bool", "boolean"):
        return "tinyint(1)"
    if name == "serial":
        return "bigint unsigned"
    if name in _AS_BINARY and _BINARY_CHARSET.search(rest):
        name = _AS_BINARY[name]
    if name == "decimal":
        parts = [p.strip() for p in (args or "10").split(",")]
        args = f"{parts[0]},{parts[1] if len(parts) > 1 else 0}"
    if name == "float" and args and "," not in args and args.strip().isdigit() and int(args) > 24:
        name, args = "double", None
    text = f"{name}({args})" if args is not None and name not in ("float", "double") else name
    return f"{text} {flags}".strip()


def _column(clause: str) -> tuple[str, ColumnType, str]:
    """`name type [attributes]` -> (name, its type, the attributes' text); SchemaError when unreadable."""
    column = _COLUMN.match(clause)
    if column is None:
        raise SchemaError(f"cannot read the column definition {clause[:200]!r}")
    args, after = _parenthesised(clause[column.end():])
    flags = _FLAGS.match(after)
    assert flags is not None  # the pattern matches the empty string
    mysql_type = _mysql_type(column.group("type"), args, " ".join(flags.group(1).lower().split()), after)
    return _unquote(column.group(1)), column_type(mysql_type), after


def definition_type(definition: str) -> ColumnType:
    """The type of a column definition (`s VARCHAR(12) NOT NULL DEFAULT 'x'`, as ALTER TABLE ADD/MODIFY
    give it: changefeed.ddl_parse.ColumnDefinition.definition), spelled as rows' `mysqlType` would."""
    return _column(definition)[1]


def _head(sql: str) -> tuple[str, re.Match[str]] | None:
    """The statement as MySQL reads it (comments out, executable comments, which MySQL ran, opened) and its
    CREATE TABLE head; None when it is not a CREATE TABLE with a column list."""
    try:
        text = executable_sql(sql)
    except DDLParseError:
        return None
    head = _HEAD.match(text)
    return None if head is None else (text, head)


def if_not_exists(sql: str) -> bool:
    """Whether a CREATE TABLE statement is CREATE TABLE IF NOT EXISTS."""
    found = _head(sql)
    return found is not None and found[1].group("if_not_exists") is not None


def _key_columns(parts: str) -> list[str]:
    """`a`, b(10) DESC -> [a, b]: the columns of a key's parenthesised part."""
    return [_unquote(re.split(r"[\s(]", part.strip(), maxsplit=1)[0]) for part in split_clauses(parts)]


def created_shape(sql: str, default_db: str) -> TableShape | None:
    """The table a CREATE TABLE defines, or None when the statement is not one this reader is sure of."""
    found = _head(sql)
    if found is None:
        return None
    text, head = found
    database, table = (default_db, _unquote(head["first"])) if head["second"] is None else (
        _unquote(head["first"]), _unquote(head["second"]))
    body, rest = _parenthesised(text[head.end() - 1:])
    if body is None or re.search(r"\b(?:SELECT|LIKE)\b", rest, re.IGNORECASE) or re.match(r"\s*LIKE\b", body, re.I):
        return None
    columns, key, uniques, not_null = [], [], [], set()
    for clause in split_clauses(body):
        if primary := _PRIMARY.match(clause):
            key = _key_columns(primary[1])
            continue
        if unique := _UNIQUE.match(clause):
            uniques.append(_key_columns(unique[1]))
            continue
        if _TABLE_CLAUSE.match(clause):
            continue
        if _GENERATED.search(clause):
            return None
        try:
            name, ctype, after = _column(clause)
        except SchemaError:
            return None
        columns.append((name, ctype))
        if re.search(r"\bPRIMARY\s+KEY\b", after, re.IGNORECASE):
            key = [name]
        if _NOT_NULL.search(after):
            not_null.add(name)
        if re.search(r"\bUNIQUE\b", after, re.IGNORECASE):
            uniques.append([name])
    if not key:
        key = next((unique for unique in uniques if set(unique) <= not_null), [])
    names = {name for name, _ in columns}
    if not key or not columns or not set(key) <= names:
        return None
    return TableShape(database, table, tuple(columns), tuple(key))
