"""`ts`: commit timestamp modulo partitions; spreads load but keeps no per-key order."""

from changefeed.model import RowChange


class TsDispatcher:
    def partition(self, change: RowChange, partitions: int) -> int:
        return change.commit_ts % partitions
