"""`index-value`: hash of the values of an index (the primary key by default, or `index=name`'s
columns), so every change of one row lands on one partition in commit order."""

from changefeed.dispatch.by_table import TableDispatcher
from changefeed.dispatch.partition import stable_hash
from changefeed.errors import ConfigError
from changefeed.model import RowChange


class IndexValueDispatcher:
    def __init__(self, index_columns: tuple[str, ...] | None = None) -> None:
        self.index_columns = index_columns
        self._fallback = TableDispatcher()

    def partition(self, change: RowChange, partitions: int) -> int:
        columns = self.index_columns or change.table.handle_key
        if not columns:  # no key to hash: keep the table's order instead
            return self._fallback.partition(change, partitions)
        row = change.row
        missing = [c for c in columns if c not in row]
        if missing:
            raise ConfigError(
                f"index-value dispatcher: table {change.table.name} has no column(s) "
                f"{', '.join(missing)}; fix the dispatch rule's index"
            )
        values = [row[c] for c in columns]
        return stable_hash((change.table.schema, change.table.table, *values)) % partitions
