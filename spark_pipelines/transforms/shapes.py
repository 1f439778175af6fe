"""Which tables a batch of messages touches, and their columns, types and keys.

`shape_rows` is the pure DataFrame part; `fold_shapes` turns its few collected rows (one per
distinct message layout) into TableShapes on the driver.
"""

import json
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_pipelines.errors import SchemaError
from spark_pipelines.schemas import column_type
from spark_pipelines.transforms.parse import SEQ
from spark_pipelines.transforms.rows import TableShape


def shape_rows(messages: DataFrame) -> DataFrame:
    """One row per (table, layout): database, table, pk (JSON), columns (JSON list in row order),
    types (JSON object), newest (greatest sequence of a message with that layout)."""
    dml = messages.where(F.col("valid") & ~F.col("is_ddl"))
    return dml.groupBy(
        "database", "table",
        F.to_json(F.col("pk_names")).alias("pk"),
        F.to_json(F.col("key_names")).alias("key_names"),
        F.to_json(F.map_keys(F.col("row"))).alias("columns"),
        F.to_json(F.col("mysql_types")).alias("types"),
    ).agg(F.max(SEQ).alias("newest"))


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
