"""Where a micro-batch's row changes are cut by its schema changes, table by table.

A schema change (ALTER, TRUNCATE, DROP, RENAME, CREATE) of table t must see every earlier change of t
merged, and no later one: those are read with t's new layout. Other tables' changes are not affected by
it, so they need no cut there: they wait and merge together at their own next schema change or at the
batch's end. A batch with k schema changes over n tables used to merge up to (k + 1) x n times (every
table at every cut); now about k + n. `Segments` keeps, per table, the sequence of its last cut and
writes the filters (sans-I/O: Spark Column expressions only, no action).
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_pipelines.io.tables import seq_literal
from spark_pipelines.transforms.parse import SEQ

Name = tuple[str, str]  # (database, table) as the messages spell them


def _is(name: Name) -> Column:
    return (F.col("database") == F.lit(name[0])) & (F.col("table") == F.lit(name[1]))


class Segments:
    def __init__(self) -> None:
        self._low: dict[Name, Any] = {}  # table -> sequence of its last schema change in this batch

    def _after_low(self, name: Name) -> Column:
        low = self._low.get(name)
        return _is(name) if low is None else _is(name) & (F.col(SEQ) > seq_literal(low))

    def before(self, tables: set[Name], boundary: Any) -> Column:
        """The changes of `tables` since their last cut and before the schema change at `boundary`."""
        since = reduce(lambda a, b: a | b, (self._after_low(name) for name in sorted(tables)))
        return since & (F.col(SEQ) < seq_literal(boundary))

    def cut(self, tables: set[Name], boundary: Any) -> None:
        for name in tables:
            self._low[name] = boundary

    def rest(self) -> Column:
        """Every change not yet merged: after its table's last cut, or all of a table never cut."""
        if not self._low:
            return F.lit(True)
        cut = sorted(self._low)
        never = ~reduce(lambda a, b: a | b, (_is(name) for name in cut))
        return reduce(lambda a, b: a | b, (self._after_low(name) for name in cut), never)
