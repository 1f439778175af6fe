"""The interface every sink implements: asynchronous send with per-message acknowledgement."""

from collections.abc import Callable
from typing import Protocol

from sink.errors import SinkError
from sink.message import Message

# Called once per message, from the sink's delivery thread: error is None when the broker
# acknowledged it (per required-acks), else the SinkError saying why not.
AckCallback = Callable[[Message, SinkError | None], None]


class Sink(Protocol):
    def send(self, message: Message, on_ack: AckCallback) -> None:
        """Queue one message; blocks while the in-flight memory quota is used up (or until closed)."""
        ...

    def flush(self, timeout: float) -> int:
        """Wait up to `timeout` s for in-flight messages; returns how many are still pending."""
        ...

    def close(self) -> None:
        """Stop at once: pending messages are reported with SinkClosedError. Idempotent."""
        ...
