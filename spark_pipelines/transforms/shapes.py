"""Which tables a batch of messages touches, and their columns, types and keys.

`shape_rows` is the pure DataFrame part; `fold_shapes` turns its few collected rows (one per
distinct message layout) into TableShapes on the driver, and `key_ranges` into the range of the first
key column the batch touches (so a MERGE reads only the target files whose statistics overlap it).
"""

import json
from collections.abc import Iterable
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_pipelines.errors import SchemaError
from spark_pipelines.schemas import column_type
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.transforms.rows import TableShape

# Integer digits of any MySQL integer value (BIGINT UNSIGNED has 20) fit a DECIMAL(38,0) exactly.
_KEY_NUMBER = "decimal(38,0)"


def shape_rows(messages: DataFrame) -> DataFrame:
    """One row per (table, layout): database, table, pk (JSON), columns (JSON list in row order),
    types (JSON object), newest (greatest sequence of a message with that layout), key_low / key_high
    (least and greatest value of the first key column as a number, over the new and, for an UPDATE
    that changes the key, the old row; NULL when some value is not an integer), rows (messages) and
    newest_ms (their newest commit time, epoch milliseconds: the progress line's, transforms/summary.py)."""
    dml = messages.where(F.col("valid") & ~F.col("is_ddl"))
    return dml.groupBy("database", "table", *layout_keys()).agg(*layout_aggregates())


def layout_keys() -> list[Column]:
    """What tells one message layout from another (besides its table): shape_rows' grouping."""
    return [
        F.to_json(F.col("pk_names")).alias("pk"),
        F.to_json(F.col("key_names")).alias("key_names"),
        F.to_json(F.map_keys(F.col("row"))).alias("columns"),
        F.to_json(F.col("mysql_types")).alias("types"),
    ]


def layout_aggregates() -> list[Column]:
    """shape_rows' aggregates over the messages of one layout: newest, key_low, key_high, rows, newest_ms."""
    first_key = F.get(F.col("pk_names"), 0)  # NULL for a table without pkNames (keyed by the message key)
    new_key = F.col("row")[first_key]
    old_key = F.coalesce(F.col("old")[first_key], new_key)
    new_number, old_number = (_as_key_number(value) for value in (new_key, old_key))
    # A count of the values that are not integers: any makes the layout's range unknown (NULL).
    odd = F.sum((new_number.isNull() | old_number.isNull()).cast("int"))
    return [
        F.max(SEQ).alias("newest"),
        F.when(odd == 0, F.min(F.least(new_number, old_number))).alias("key_low"),
        F.when(odd == 0, F.max(F.greatest(new_number, old_number))).alias("key_high"),
        *table_counts(),
    ]


def table_counts() -> list[Column]:
    """Messages counted (rows) and their newest commit time (newest_ms, epoch milliseconds)."""
    return [F.count(F.lit(1)).alias("rows"), F.max(F.unix_millis(F.col(COMMIT_TS))).alias("newest_ms")]


def _as_key_number(value: Column) -> Column:
    """The integer a key value spells, or NULL (a fraction, text, NULL): only exact integers count."""
    number = value.try_cast(_KEY_NUMBER)
    return F.when(value.rlike(r"^-?[0-9]+$"), number)


def _key(layout: Any) -> list[str]:
    """The columns a table's rows are keyed by: `pkNames`, else the columns of the message key.

    TiCDC's canal-JSON sends `pkNames: []` for a table without a PRIMARY KEY even when a unique key on
    NOT NULL columns identifies its rows: MySQL's stand-in primary key ("If a table has no PRIMARY KEY
    ... MySQL returns the first UNIQUE index that has no NULL columns as the PRIMARY KEY", MySQL manual,
    CREATE TABLE). The changefeed's message key (`message-key=handle-key`, its default) names that
    handle key. A table with no handle key at all gets every column in its message key: its rows are
    not identifiable, so no key (the caller refuses the table)."""
    pk = json.loads(layout["pk"] or "null")
    if pk:
        return list(pk)
    names = json.loads(layout["key_names"] or "null") or []
    return [] if sorted(names) == sorted(json.loads(layout["columns"])) else list(names)


def fold_shapes(rows: Iterable[Any]) -> dict[tuple[str, str], TableShape]:
    """Newest layout first: its column order and types win; columns only older layouts have are
    appended (their messages still carry values for them)."""
    by_table: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        by_table.setdefault((row["database"], row["table"]), []).append(row)
    shapes = {}
    for (database, table), layouts in by_table.items():
        layouts.sort(key=lambda r: tuple(r["newest"]), reverse=True)
        pk = _key(layouts[0])
        if not pk:
            raise SchemaError(f"table {database}.{table} has no primary key and no unique key on NOT NULL "
                              "columns (pkNames and the message key name none), so its rows cannot be "
                              "identified; add a primary key in MySQL, or exclude the table "
                              "(tables.exclude), or send message-key=handle-key")
        columns: dict[str, Any] = {}
        for layout in layouts:
            types = json.loads(layout["types"])
            for name in json.loads(layout["columns"]):
                if name not in columns:
                    if name not in types:
                        raise SchemaError(f"table {database}.{table}: column {name!r} has a value but no "
                                          "mysqlType entry; the changefeed must send types for every column")
                    try:
                        columns[name] = column_type(types[name])
                    except SchemaError as exc:
                        raise SchemaError(f"table {database}.{table}, column {name!r}: {exc}") from None
        missing = [k for k in pk if k not in columns]
        if missing:
            raise SchemaError(f"table {database}.{table}: primary key column(s) {missing} missing from "
                              "the row data")
        shapes[(database, table)] = TableShape(database, table, tuple(columns.items()), tuple(pk))
    return shapes


Name = tuple[str, str]


def key_ranges(rows: Iterable[Any], shapes: dict[Name, TableShape]) -> dict[Name, tuple[int, int]]:
    """(least, greatest) value of each table's first key column in the batch, for tables whose first
    key column is a MySQL integer type and every layout's range is known. Any key the batch changes
    lies in the range, so a MERGE may add `first_key BETWEEN least AND greatest` to its condition."""
    bounds: dict[Name, tuple[int, int] | None] = {}
    for row in rows:
        name = (row["database"], row["table"])
        if name not in shapes:
            continue
        low, high = row["key_low"], row["key_high"]
        known = name not in bounds or bounds[name] is not None
        if low is None or high is None or not known:
            bounds[name] = None
            continue
        previous = bounds.get(name)
        bounds[name] = (int(low), int(high)) if previous is None else (min(previous[0], int(low)),
                                                                       max(previous[1], int(high)))
    return {name: bound for name, bound in bounds.items()
            if bound is not None and _integral(shapes[name])}


def _integral(shape: TableShape) -> bool:
    ctype = shape.column_types()[shape.primary_key[0]]
    spark_type = ctype.spark_type
    return ctype.kind == "cast" and (spark_type.typeName() in ("byte", "short", "integer", "long")
                                     or spark_type.simpleString() == "decimal(20,0)")
