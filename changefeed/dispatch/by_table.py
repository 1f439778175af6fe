"""`table`: every change of a table on one partition (order per table, little parallelism)."""

from changefeed.dispatch.partition import stable_hash
from changefeed.model import RowChange


class TableDispatcher:
    def partition(self, change: RowChange, partitions: int) -> int:
        return stable_hash((change.table.schema, change.table.table)) % partitions
