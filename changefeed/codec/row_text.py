"""One function per table plan that turns a row into canal-JSON's `data` object ({column: text}), compiled.

A loop `{name: formatter(row.get(name)) for name, formatter in columns}` costs a Python call per column even
when the value is an integer or a plain string, the two commonest cases, whose text needs one type test. This
module writes the loop out once per table plan as straight-line Python (as changefeed/source/row_image.py does
for decoding, and `dataclasses` for its methods): an integer column is `str(v) if type(v) is int`, a plain
string column `v if type(v) is str`, and every other value (NULL included) calls the column's formatter, which
gives the same text for these values (values.py `value_formatter`, whose fast paths these are).

The code's text holds only the `repr` literals of the column names and the names f0, f1, ... the formatters
are bound to, so no byte of a column's name can change what runs. `tests/changefeed/codec/test_row_text.py`
compares it with the per-column formatters on random rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from changefeed.codec.values import FastPath, Formatter

RowText = Callable[[Mapping[str, Any]], dict[str, str | None]]


def compile_row_text(columns: Sequence[tuple[str, Formatter, FastPath]]) -> RowText:
    """The {name: text} function for `columns` (name, formatter, the formatter's fast path), in their order."""
    namespace: dict[str, Any] = {}
    lines = ["def row_text(row):", "    get = row.get"]
    for index, (name, formatter, fast) in enumerate(columns):
        namespace[f"f{index}"] = formatter
        lines.append(f"    v = get({name!r})")
        if fast is FastPath.INTEGER:
            lines.append(f"    t{index} = str(v) if type(v) is int else f{index}(v)")
        elif fast is FastPath.STRING:
            lines.append(f"    t{index} = v if type(v) is str else f{index}(v)")
        else:
            lines.append(f"    t{index} = f{index}(v)")
    lines.append("    return {" + ", ".join(f"{name!r}: t{i}" for i, (name, _, _) in enumerate(columns)) + "}")
    exec(compile("\n".join(lines), f"<row text of {len(columns)} columns>", "exec"), namespace)
    function: RowText = namespace["row_text"]
    return function
