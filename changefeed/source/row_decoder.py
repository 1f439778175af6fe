"""Decode the rows of a binlog rows event in one pass over its bytes, giving what the library gives.

python-mysql-replication decodes a row column by column through several method calls each (a bitmap
test, a type dispatch over ~25 branches, a packet read through two wrappers, name lookups through the
table map): about 15 of the 25 microseconds capture spent on a 4-column row. This decoder compiles one
image reader per table version (cached by the columns' description; `row_image`, `row_readers`) and reads
integers, floats, strings, DECIMAL, DATE, DATETIME, TIMESTAMP, TIME, ENUM, SET and BIT straight from the
event's bytes; the other types (MySQL's binary JSON, GEOMETRY) and rare values (a zero date, an empty SET)
are read by the library's own per-column reader at the same position, so every value, and every library
quirk `mounter` fixes, is exactly the library's.

Row layout (MySQL, libbinlogevents/include/rows_event.h): per row a NULL bitmap with one bit per column
present in the row image, then the values of the non-NULL columns in column order; an UPDATE has the
before image, then the after image. Only full row images take this path (binlog_row_image=FULL, which
the capture requires); an event with a partial image, a column without a name (no optional metadata) or
an unread packet buffer returns None and the caller asks the library (`event.rows`).

`tests/changefeed/source/test_row_decoder.py` decodes every column type from a real server both ways and
compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent, UpdateRowsEvent

from changefeed.source.row_image import compile_image

_MAX_PLANS = 1024  # table versions pile up only through DDL; past this many, start again


class RowPlan:
    """How to read the rows of one table version: its columns and its compiled image reader."""

    def __init__(self, columns: Sequence[Any], ignore_errors: bool) -> None:
        self.columns = list(columns)
        self.present = _all_ones(len(columns))
        self.has_sets = any(column.type == FIELD_TYPE.SET for column in columns)
        self.image = compile_image(self.columns, ignore_errors, note_nulls=self.has_sets)

    def covers(self, bitmap: bytes) -> bool:
        """Every column is in the image (bits past the last column, unused, may be either)."""
        return len(bitmap) == len(self.present) and all(
            b & f == f for b, f in zip(bitmap, self.present, strict=True))


def plan_key(columns: Sequence[Any]) -> tuple[Any, ...]:
    """What a plan depends on; equal keys share a plan (each TABLE_MAP brings new column objects)."""
    return tuple(
        (c.name, c.type, c.unsigned, getattr(c, "max_length", None), getattr(c, "length_size", None),
         c.character_set_name, getattr(c, "fsp", None), getattr(c, "precision", None),
         getattr(c, "decimals", None), getattr(c, "bits", None), getattr(c, "size", None),
         tuple(c.enum_values or ()), tuple(c.set_values or ()))
        for c in columns)


def _all_ones(count: int) -> bytes:
    whole, rest = divmod(count, 8)
    return b"\xff" * whole + (bytes([(1 << rest) - 1]) if rest else b"")


class RowsDecoder:
    """Decodes rows events with one plan per table version; returns None where the library must."""

    def __init__(self) -> None:
        self._plans: dict[tuple[Any, ...], RowPlan] = {}
        # The rows events after one TABLE_MAP share its column list: its plan is found once, not per event.
        self._columns: Any = None
        self._plan: RowPlan | None = None

    def plan(self, event: RowsEvent) -> RowPlan | None:
        columns = event.columns
        if columns is not self._columns:
            self._columns, self._plan = columns, self._plan_of(columns, event._ignore_decode_errors)
        plan = self._plan
        if plan is None or event.number_of_columns != len(columns) or not plan.covers(event.columns_present_bitmap):
            return None
        if isinstance(event, UpdateRowsEvent) and not plan.covers(event.columns_present_bitmap2):
            return None
        return plan

    def _plan_of(self, columns: Sequence[Any], ignore_errors: bool) -> RowPlan | None:
        if not all(c.name for c in columns):
            return None  # no column names in the TABLE_MAP: the library looks them up
        key = plan_key(columns)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            plan = self._plans[key] = RowPlan(columns, ignore_errors)
        return plan

    def rows(self, event: RowsEvent) -> list[dict[str, Any]] | None:
        """The event's rows as `event.rows` gives them, or None (then use `event.rows`)."""
        wrapper = event.packet
        if wrapper._BinLogPacketWrapper__data_buffer or not event.complete:
            return None
        plan = self.plan(event)
        if plan is None:
            return None
        packet = wrapper.packet  # pymysql's packet: the event's bytes and the read position in them
        data: bytes = packet._data
        pos: int = packet._position
        end = pos + event.event_size - wrapper.read_bytes
        update = isinstance(event, UpdateRowsEvent)
        rows: list[dict[str, Any]] = []
        # The library keeps one none_sources map per event and reads it after each image: so do we.
        sets = plan.has_sets
        while pos < end:
            row: dict[str, Any] = {}
            values, pos = plan.image(event, plan, data, pos)
            if update:
                row["before_values"] = values
                if sets:
                    row["before_none_sources"] = event._get_none_sources(values)
                row["after_values"], pos = plan.image(event, plan, data, pos)
                if sets:
                    row["after_none_sources"] = event._get_none_sources(row["after_values"])
            else:
                row["values"] = values
                if sets:
                    row["none_sources"] = event._get_none_sources(values)
            rows.append(row)
        if pos != end:
            raise ValueError(f"rows of {event.schema}.{event.table} end at byte {pos}, the event at {end}")
        # The library's own bookkeeping: the rows are read, `event.rows` must not read them again.
        wrapper.read_bytes = event.event_size
        packet._position = end
        return rows
