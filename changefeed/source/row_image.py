"""One function per table version that reads a row image straight through, compiled from its columns.

A row image is a NULL bitmap, then the non-NULL values in column order (row_decoder.py has the layout).
Reading it with a loop over per-column readers costs a call, a tuple and an unpack per column (about 1.2 us
a column; 30 columns are most of a wide row's capture). This module writes the loop out once per table
version as straight-line Python, the way `dataclasses` and `collections.namedtuple` build their methods:

- a run of consecutive fixed-width numbers (TINYINT..BIGINT but MEDIUMINT, FLOAT, DOUBLE) that are all
  non-NULL is one `struct.unpack_from` (its NULL bits tested together, per column when one is set);
- a string or blob is read in place: its length prefix, a bounds check, one decode;
- every other column calls its reader from row_readers.py, and the library where that one declines.

The values are exactly those of the per-column readers: the code only inlines them.
`tests/changefeed/source/test_row_decoder.py` compares with the library on a real server's binlog, and
`tests/changefeed/source/test_row_image.py` with the per-column readers on random images.
The code's text holds only numbers, the `repr` literals of the column names and the names the readers are
bound to, so no byte of a column's name or type can change what runs.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from pymysqlreplication.row_event import RowsEvent

from changefeed.source.row_readers import (
    LIBRARY,
    column_reader,
    fixed_layout,
    string_layout,
    string_overrun,
)  # fmt: skip

# (event, plan, the event's bytes, where the image starts) -> (column name -> value, where the next starts)
ImageReader = Callable[[RowsEvent, Any, bytes, int], tuple[dict[str, Any], int]]


def library_value(event: RowsEvent, plan: Any, index: int, nulls: bytes, pos: int) -> tuple[Any, int]:
    """One value read by the library's per-column reader at `pos` (it reads through `event.packet`)."""
    wrapper = event.packet
    packet = wrapper.packet
    packet._position = pos
    column = plan.columns[index]
    value = event._RowsEvent__read_values_name(
        column, nulls, index, False, plan.present, column.unsigned, index)
    if wrapper._BinLogPacketWrapper__data_buffer:  # a reader that pushed bytes back and left them
        raise ValueError(f"column {column.name} of {event.schema}.{event.table} left unread bytes behind")
    return value, packet._position


class _Writer:
    """Builds the source text of one image function, and the names it refers to."""

    def __init__(self, note_nulls: bool) -> None:
        self.lines: list[str] = []
        self.bound: dict[str, Any] = {"LIBRARY": LIBRARY, "library_value": library_value,
                                      "string_overrun": string_overrun}
        self.note_nulls = note_nulls  # keep the library's none_sources (read by mounter for SET columns)

    def bind(self, prefix: str, value: Any) -> str:
        name = f"{prefix}{len(self.bound)}"
        self.bound[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def null_test(self, indexes: Sequence[int]) -> str:
        """An expression true when any of the columns is NULL."""
        masks: dict[int, int] = {}
        for i in indexes:
            masks[i >> 3] = masks.get(i >> 3, 0) | 1 << (i & 7)
        return " or ".join(f"nulls[{byte}] & {mask}" for byte, mask in sorted(masks.items()))

    def column(self, depth: int, index: int, column: Any, ignore_errors: bool) -> None:
        """Reads one column: NULL, or its value by the cheapest route that gives the reader's value."""
        name = repr(column.name)
        self.emit(depth, f"if {self.null_test([index])}:")
        self.emit(depth + 1, f"values[{name}] = None")
        if self.note_nulls:
            self.emit(depth + 1, f"sources[{name}] = 'null'")
        self.emit(depth, "else:")
        body = depth + 1
        layout = fixed_layout(column)
        string = string_layout(column, ignore_errors)
        if layout is not None:
            self.emit(body, f"values[{name}] = {self.bind('unpack', layout.unpack_from)}(data, pos)[0]")
            self.emit(body, f"pos += {layout.size}")
        elif string is not None:
            prefix, decode = string
            if prefix == 1:
                length = "data[pos]"
            elif prefix == 2:
                length = "(data[pos] | data[pos + 1] << 8)"
            else:
                length = f"int.from_bytes(data[pos:pos + {prefix}], 'little')"
            self.emit(body, f"end = pos + {prefix} + {length}")
            self.emit(body, "if end > size:")
            self.emit(body + 1, f"raise string_overrun(end - pos - {prefix})")
            self.emit(body, f"values[{name}] = {self.bind('decode', decode)}(data[pos + {prefix}:end])")
            self.emit(body, "pos = end")
        elif (reader := column_reader(column, ignore_errors)) is not None:
            self.emit(body, f"value, pos = {self.bind('read', reader)}(data, pos)")
            self.emit(body, "if value is LIBRARY:  # a rare value (a zero date...) only the library reads")
            self.emit(body + 1, f"value, pos = library_value(event, plan, {index}, nulls, pos)")
            self.emit(body, f"values[{name}] = value")
        else:
            self.emit(body, f"values[{name}], pos = library_value(event, plan, {index}, nulls, pos)")

    def numbers(self, depth: int, run: list[tuple[int, Any]], ignore_errors: bool) -> None:
        """A run of fixed-width numbers: one unpack when none is NULL, else column by column."""
        layouts = [fixed_layout(column) for _, column in run]
        joined = struct.Struct("<" + "".join(layout.format.lstrip("<") for layout in layouts if layout))
        self.emit(depth, f"if not ({self.null_test([i for i, _ in run])}):")
        targets = ", ".join(f"values[{column.name!r}]" for _, column in run)
        self.emit(depth + 1, f"{targets} = {self.bind('unpack', joined.unpack_from)}(data, pos)")
        self.emit(depth + 1, f"pos += {joined.size}")
        self.emit(depth, "else:")
        for index, column in run:
            self.column(depth + 1, index, column, ignore_errors)


def compile_image(columns: Sequence[Any], ignore_errors: bool, note_nulls: bool) -> ImageReader:
    """The image reader of one table version (`columns`: the library's TABLE_MAP columns, all named)."""
    writer = _Writer(note_nulls)
    null_bytes = (len(columns) + 7) // 8
    writer.emit(0, "def image(event, plan, data, pos):")
    writer.emit(1, f"nulls = data[pos:pos + {null_bytes}]")
    writer.emit(1, f"pos += {null_bytes}")
    writer.emit(1, "size = len(data)")
    writer.emit(1, "values = {}")
    if note_nulls:
        writer.emit(1, "sources = event._RowsEvent__none_sources")
    run: list[tuple[int, Any]] = []
    for index, column in [*enumerate(columns), (len(columns), None)]:
        if column is not None and fixed_layout(column) is not None:
            run.append((index, column))
            continue
        if len(run) > 1:
            writer.numbers(1, run, ignore_errors)
        elif run:
            writer.column(1, *run[0], ignore_errors)
        run = []
        if column is not None:
            writer.column(1, index, column, ignore_errors)
    writer.emit(1, "return values, pos")
    source = "\n".join(writer.lines)
    namespace = dict(writer.bound)
    exec(compile(source, f"<row image of {len(columns)} columns>", "exec"), namespace)
    image: ImageReader = namespace["image"]
    image.source = source  # type: ignore[attr-defined]  # for a reader of a traceback or a test
    return image
