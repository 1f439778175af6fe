"""ALTER TABLE column clauses on a Delta table, with MySQL's effect on the rows that exist at the DDL.

Applied at the DDL's sequence S, between the rows before and after it (jobs/apply.py), clause by clause
in statement order (MySQL manual 15.1.9 "ALTER TABLE Statement"):
- ADD COLUMN adds the column at its position (FIRST / AFTER x, else last) and gives every live row
  older than S the value MySQL gave it (transforms/column_values.py);
- MODIFY / CHANGE renames, changes the type (Delta type widening; a narrower DOUBLE->FLOAT or DECIMAL
  rounds the older rows as MySQL converts them) and moves the column (FIRST / AFTER x);
- DROP / RENAME COLUMN use Delta column mapping.
Replay-safe: applying the DDL again (or the topic from a new checkpoint) leaves the table as MySQL has
it: a column already there is not added twice, rows newer than S keep their values, and every later
DDL replays after it.
"""

from __future__ import annotations

from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from changefeed.ddl_parse import AddColumn, ColumnDefinition, ColumnEdit, DropColumn, ModifyColumn, RenameColumn
from spark_pipelines.errors import SchemaError
from spark_pipelines.io.delta import DELETED, add_column, follow_type, q, table_ref
from spark_pipelines.io.history import VALID_TO
from spark_pipelines.io.tables import seq_literal
from spark_pipelines.transforms.column_values import existing_value, refuse_unknowable, spark_zone
from spark_pipelines.transforms.create_table import definition_type
from spark_pipelines.transforms.parse import SEQ


class ColumnEditor:
    """The column clauses of one ALTER TABLE message, applied to the Delta table at `path`."""

    def __init__(self, spark: Any, path: str, ddl: Any, *, source_time_zone: str = "UTC",
                 history: bool = False) -> None:
        self.spark, self.path, self.ddl = spark, path, ddl
        # MySQL evaluates the DDL's CURRENT_TIMESTAMP and TIMESTAMP literals in the session's zone, which the
        # changefeed sends when the statement used it (a UTC offset such as -08:00, or a named zone).
        self.zone = spark_zone(ddl["session_time_zone"]) or source_time_zone
        # Rows the DDL found: live (SCD 2: the open version) and older than the DDL.
        self.older: Column = (F.col(SEQ) < seq_literal(ddl[SEQ])) & ~F.col(DELETED)
        if history:
            self.older = self.older & F.col(VALID_TO).isNull()

    def apply(self, edits: tuple[ColumnEdit, ...]) -> None:
        for edit in edits:
            if isinstance(edit, DropColumn):
                if self._has(edit.name):
                    self._sql(f"DROP COLUMN {q(edit.name)}")
            elif isinstance(edit, RenameColumn):
                self._rename(edit.old, edit.new)
            elif isinstance(edit, AddColumn):
                self._add(edit)
            else:
                self._modify(edit)

    def _schema(self) -> dict[str, Any]:
        return {f.name.lower(): f for f in self.spark.read.format("delta").load(self.path).schema}

    def _has(self, name: str) -> bool:
        return name.lower() in self._schema()

    def _sql(self, clause: str) -> None:
        self.spark.sql(f"ALTER TABLE {table_ref(self.path)} {clause}")

    def _rename(self, old: str, new: str) -> None:
        """A column re-added by replayed older rows may hold the new name already: the rename wins."""
        if old.lower() == new.lower() or not self._has(old):
            return
        if self._has(new):
            self._sql(f"DROP COLUMN {q(old)}")
        else:
            self._sql(f"RENAME COLUMN {q(old)} TO {q(new)}")

    def _type(self, column: ColumnDefinition) -> Any:
        try:
            return definition_type(column.definition)
        except SchemaError as exc:
            raise SchemaError(f"{exc} (in the DDL {self.ddl['sql'][:300]!r}); exclude the table in the config") \
                from None

    def _add(self, edit: AddColumn) -> None:
        column = edit.column
        refuse_unknowable(column, self.ddl["sql"])  # before the table changes
        ctype = self._type(column)
        if self._has(column.name):
            if edit.if_not_exists:
                return  # MySQL left the column as it was
            # Else a replay: the column is there from the first run, and the older rows get their
            # value again (later DDL replays after this one, so the last one still wins).
        else:
            add_column(self.spark, self.path, column.name, ctype.sql, first=column.first,
                       after=self._anchor(column.after))
        value = existing_value(column, ctype, self.ddl[SEQ]["ts"] >> 18, self.ddl["sql"], self.zone)
        if value is not None:
            current = self._schema()[column.name.lower()]
            DeltaTable.forPath(self.spark, self.path).update(
                condition=self.older, set={q(current.name): value.cast(current.dataType)})

    def _anchor(self, after: str | None) -> str | None:
        if after is None:
            return None
        field = self._schema().get(after.lower())
        return field.name if field is not None else None  # unknown to Delta: the column goes last

    def _modify(self, edit: ModifyColumn) -> None:
        column = edit.column
        self._rename(edit.old, column.name)
        if not self._has(column.name):
            return  # MODIFY/CHANGE IF EXISTS of a missing column, or a column this table never had
        name = self._schema()[column.name.lower()].name
        ctype = self._type(column)
        existing = self._schema()[name.lower()].dataType
        target = follow_type(self.spark, self.path, name, existing, ctype)
        self._convert(name, target, ctype.spark_type)
        if column.first:
            self._sql(f"ALTER COLUMN {q(name)} FIRST")
        elif (after := self._anchor(column.after)) is not None:
            self._sql(f"ALTER COLUMN {q(name)} AFTER {q(after)}")

    def _convert(self, name: str, stored: Any, incoming: Any) -> None:
        """A type the Delta column keeps wider than MySQL's new one: round the older rows as MySQL
        converted them (DOUBLE -> FLOAT; DECIMAL to fewer digits, half away from zero)."""
        narrower = (isinstance(stored, T.DoubleType) and isinstance(incoming, T.FloatType)) or (
            isinstance(stored, T.DecimalType) and isinstance(incoming, T.DecimalType)
            and incoming.scale < stored.scale)
        if narrower:
            DeltaTable.forPath(self.spark, self.path).update(
                condition=self.older, set={q(name): F.col(q(name)).cast(incoming).cast(stored)})

