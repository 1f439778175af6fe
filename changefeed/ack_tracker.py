"""Acknowledgement tracking for the delivery path, per sent unit: the delivery path sends message
batches (sink.message.MessageBatch), each acknowledged once when all its messages are
(changefeed.checkpoint.AckTracker works per transaction, for callers that acknowledge whole
transactions). The checkpoint may only pass a transaction once every unit sent before it is acknowledged.

Units get increasing sequence numbers as they are sent; a transaction's checkpoint is queued behind
the last sequence sent before it. Acks arrive in any order (many partitions); the checkpoint advances
to the newest transaction whose every earlier unit is acknowledged. Pure and thread-safe; the lowest
unacknowledged sequence only moves forward, so each ack costs O(1) amortised.
"""

import threading
from collections import deque

from changefeed.model import Checkpoint


class MessageAckTracker:
    def __init__(self, start: Checkpoint | None = None) -> None:
        self._lock = threading.Lock()
        self._next_seq = 0
        self._pending: set[int] = set()
        self._lowest_unacked = 0
        self._boundaries: deque[tuple[int, Checkpoint]] = deque()
        self._checkpoint = start
        self._failed: BaseException | None = None

    def sent(self) -> int:
        """Register one unit (a message batch); returns its sequence number for `acked`."""
        with self._lock:
            seq = self._next_seq
            self._next_seq += 1
            self._pending.add(seq)
            return seq

    def acked(self, seq: int) -> None:
        with self._lock:
            self._pending.discard(seq)
            self._advance()

    def failed(self, error: BaseException) -> None:
        """A message could not be delivered: the checkpoint must stop where it is."""
        with self._lock:
            self._failed = self._failed or error

    def transaction_done(self, checkpoint: Checkpoint) -> None:
        with self._lock:
            self._boundaries.append((self._next_seq, checkpoint))
            self._advance()

    def _advance(self) -> None:
        if self._failed is not None:
            return
        lowest, pending = self._lowest_unacked, self._pending
        while lowest < self._next_seq and lowest not in pending:
            lowest += 1
        self._lowest_unacked = lowest
        while self._boundaries and self._boundaries[0][0] <= self._lowest_unacked:
            self._checkpoint = self._boundaries.popleft()[1]

    @property
    def checkpoint(self) -> Checkpoint | None:
        with self._lock:
            return self._checkpoint

    @property
    def error(self) -> BaseException | None:
        with self._lock:
            return self._failed

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._pending)
