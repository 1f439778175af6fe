"""`columns`: hash of the named columns' values (they should include the key for per-key order)."""

from changefeed.dispatch.partition import stable_hash
from changefeed.errors import ConfigError
from changefeed.model import RowChange


class ColumnsDispatcher:
    def __init__(self, columns: tuple[str, ...]) -> None:
        if not columns:
            raise ConfigError('columns dispatcher needs at least one column: columns = ["a", ...]')
        self.columns = columns

    def partition(self, change: RowChange, partitions: int) -> int:
        row = change.row
        missing = [c for c in self.columns if c not in row]
        if missing:
            raise ConfigError(
                f"columns dispatcher: table {change.table.name} has no column(s) "
                f"{', '.join(missing)}; fix the dispatch rule's columns"
            )
        return stable_hash([row[c] for c in self.columns]) % partitions
