"""The interface every sink implements: asynchronous send of message batches, one acknowledgement each."""

from collections.abc import Callable
from typing import Protocol

from sink.errors import SinkError
from sink.message import MessageBatch

# Called from the sink's delivery thread (or the sending thread while it serves reports): with the
# first SinkError as soon as any message of the batch fails, else once with None when the broker has
# acknowledged every message of the batch (per required-acks). Never called twice with None.
BatchCallback = Callable[[SinkError | None], None]


class Sink(Protocol):
    def send_batch(self, batch: MessageBatch, on_ack: BatchCallback) -> None:
        """Queue the batch's messages in order; blocks while the in-flight memory quota is used up
        (or until closed)."""
        ...

    def transaction_done(self) -> None:
        """A source transaction ended. A transactional sink commits what was sent since the last call and
        only then acknowledges those batches; any other sink does nothing."""
        ...

    def flush(self, timeout: float) -> int:
        """Wait up to `timeout` s for in-flight messages; returns how many are still pending."""
        ...

    def close(self) -> None:
        """Stop at once: pending messages are reported with SinkClosedError. Idempotent."""
        ...
