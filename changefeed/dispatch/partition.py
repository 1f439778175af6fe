"""The partition-strategy interface and the stable hash every strategy uses.

Strategies must agree across processes and restarts, so they hash with CRC-32 (never Python's
randomised `hash`). Each strategy lives in its own module and answers one question.
"""

import zlib
from collections.abc import Iterable
from typing import Protocol

from changefeed.model import RowChange


class PartitionDispatcher(Protocol):
    def partition(self, change: RowChange, partitions: int) -> int:
        """Partition in [0, partitions) for `change`; updates hash the new row, deletes the old."""
        ...


def stable_hash(parts: Iterable[object]) -> int:
    crc = 0
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        crc = zlib.crc32(data + b"\x00", crc)
    return crc
