"""The compiled row -> {column: text} function (row_text.py) against the per-column formatters it inlines,
on random tables and rows: values of each fast path's own type, of other types (bool in an integer column,
bytes in a string column, NULL), absent columns, and column names made to break generated code."""

from __future__ import annotations

import datetime
import functools
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from changefeed.codec.row_text import compile_row_text
from changefeed.codec.values import FastPath, Formatter, fast_path, value_formatter
from changefeed.model import Column

NAMES = ["id", "a'b", 'q"q', "back\\slash", "new\nline", "é€😀", "}) ; import os #", "", "get", "v", "t0", "f0"]

KINDS: list[tuple[Column, list[Any]]] = [
    (Column("", "int", "int"), [0, -5, 2**64 - 1, True, False, None, Decimal(3), "7"]),
    (Column("", "year", "year"), [2026, None, 0]),
    (Column("", "bigint", "bigint unsigned", unsigned=True), [2**63 + 1, None]),
    (Column("", "varchar", "varchar(10)", charset="utf8mb4"), ["", "text", "é", None, b"bytes", b"\xff"]),
    (Column("", "text", "text", charset="utf8mb4"), ["long " * 20, None]),
    (Column("", "varbinary", "varbinary(4)", charset="binary"), [b"\x00\xff", "s", None]),
    (Column("", "double", "double"), [1.0, -0.0, 1e300, None]),
    (Column("", "decimal", "decimal(10,2)"), [Decimal("1.50"), None]),
    (Column("", "datetime", "datetime(3)", fsp=3), [datetime.datetime(2026, 1, 2, 3, 4, 5, 678000), None]),
    (Column("", "json", "json"), ['{"b": 1, "a": 2}', None, "not json"]),
    (Column("", "enum", "enum('x','y')", elements=("x", "y")), ["x", "Y", "", None]),
]


def _per_column(formatters: list[tuple[str, Formatter, FastPath]], row: dict[str, Any]) -> dict[str, str | None]:
    return {name: formatter(row.get(name)) for name, formatter, _ in formatters}


def _outcome(function: Callable[[dict[str, Any]], dict[str, str | None]], row: dict[str, Any]) -> tuple[str, Any]:
    """The texts, or the error raised instead (a varchar's bytes that are not UTF-8 stop both ways)."""
    try:
        return "texts", function(row)
    except ValueError as e:
        return "error", (type(e), str(e))


def test_the_compiled_function_gives_each_formatters_text() -> None:
    rng = random.Random(9)
    fast_paths_seen = set()
    for _ in range(300):
        width = rng.randint(0, 12)
        names = rng.sample(NAMES, min(width, len(NAMES)))
        chosen = [(name, *rng.choice(KINDS)) for name in names]
        columns = [Column(name, kind.data_type, kind.mysql_type, unsigned=kind.unsigned, charset=kind.charset,
                          fsp=kind.fsp, elements=kind.elements) for name, kind, _ in chosen]
        formatters = [(c.name, value_formatter(c), fast_path(c)) for c in columns]
        fast_paths_seen |= {fast for _, _, fast in formatters}
        text = compile_row_text(formatters)
        for _ in range(20):
            row = {name: rng.choice(values) for name, _, values in chosen if rng.random() < 0.9}  # some absent
            expected = _outcome(functools.partial(_per_column, formatters), row)
            got = _outcome(text, row)
            assert got == expected and list(got[1]) == list(expected[1]), (row, got, expected)
    assert fast_paths_seen == set(FastPath)


def test_a_table_of_4096_columns_compiles() -> None:
    """MySQL's limit on columns per table."""
    columns = [Column(f"c{i}", "int", "int") for i in range(4096)]
    text = compile_row_text([(c.name, value_formatter(c), fast_path(c)) for c in columns])
    assert text({f"c{i}": i for i in range(4096)}) == {f"c{i}": str(i) for i in range(4096)}
