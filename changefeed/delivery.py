"""Capture events -> canal-JSON messages -> sink, with the checkpoint following acknowledgements.

This is the data path of one changefeed: split key-changing updates, encode, route, enforce the
message limit, send, and advance the checkpoint only over acknowledged transactions. DDL goes to
partition 0 of the table's topic, one message per touched table; watermarks (TiDB extension) go to
every partition of every topic seen.
"""

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from changefeed.ack_tracker import MessageAckTracker
from changefeed.codec.base import Encoded
from changefeed.codec.canal_json import CanalJsonEncoder, split_key_changing_update
from changefeed.dispatch.router import Router
from changefeed.errors import ChangefeedError
from changefeed.model import CaptureEvent, Checkpoint, DDLEvent, RowChange, TransactionCommit
from sink.base import Sink
from sink.claim_check import FileClaimCheckStorage
from sink.errors import SinkError
from sink.message import Message

log = logging.getLogger(__name__)


class MessageTooLargeForPolicy(ChangefeedError):
    """A row's message exceeds the limit and large-message-handle=none."""


@dataclass
class DeliveryStats:
    rows: int = 0
    ddl: int = 0
    messages: int = 0
    bytes: int = 0
    oversized: int = 0  # rows sent key-only or through claim-check


class Delivery:
    def __init__(
        self,
        sink: Sink,
        encoder: CanalJsonEncoder,
        router: Router,
        partitions_of: dict[str, int],
        *,
        message_limit: int,
        start: Checkpoint | None = None,
        output_raw_change_event: bool = False,
        watermark_every: int = 0,
        large_message_handle: str = "none",
        claim_check: FileClaimCheckStorage | None = None,
        on_failure: Callable[[], None] | None = None,
        on_latency: Callable[[float], None] | None = None,
    ) -> None:
        if large_message_handle == "claim-check" and claim_check is None:
            raise ChangefeedError("large-message-handle=claim-check needs a claim-check storage")
        self.sink = sink
        self.encoder = encoder
        self.router = router
        self.partitions_of = partitions_of
        self.message_limit = message_limit
        self.output_raw_change_event = output_raw_change_event
        self.watermark_every = watermark_every
        self.large_message_handle = large_message_handle
        self.claim_check = claim_check
        # Called from the sink's thread on the first failed delivery, so a runner can stop a capture
        # that is waiting for new binlog events instead of noticing only at the next event.
        self.on_failure = on_failure
        self.on_latency = on_latency  # send-to-acknowledgement seconds of each message (metrics)
        self.tracker = MessageAckTracker(start)
        self.stats = DeliveryStats()
        self._lock = threading.Lock()
        self._transactions = 0

    def run(self, events: Iterable[CaptureEvent]) -> None:
        for event in events:
            error = self.tracker.error
            if error is not None:
                raise error
            if isinstance(event, RowChange):
                changes = [event] if self.output_raw_change_event else split_key_changing_update(event)
                for change in changes:
                    self._send_row(change)
            elif isinstance(event, DDLEvent):
                self._send_ddl(event)
            elif isinstance(event, TransactionCommit):
                self.tracker.transaction_done(event.checkpoint)
                self._transactions += 1
                if self.watermark_every and self._transactions % self.watermark_every == 0:
                    self._send_watermarks(event.checkpoint.commit_ts)

    def _send_row(self, change: RowChange) -> None:
        topic, partition = self.router.route(change, self.partitions_of)
        encoded = self.encoder.encode_row(change)
        if encoded.size > self.message_limit:
            encoded = self._oversized(change, encoded)
        self._send(topic, partition, encoded)
        self.stats.rows += 1

    def _oversized(self, change: RowChange, encoded: Encoded) -> Encoded:
        """Apply large-message-handle to one row whose message is over the limit."""
        key = encoded.key.decode() if encoded.key else "(no key)"
        if self.large_message_handle == "none":
            raise MessageTooLargeForPolicy(
                f"row of {change.table.name} with key {key} encodes to {encoded.size} bytes, above the "
                f"message limit of {self.message_limit} bytes; raise max-message-bytes (and the topic's "
                "max.message.bytes) or choose large-message-handle handle-key-only or claim-check"
            )
        location = None
        if self.large_message_handle == "claim-check":
            assert self.claim_check is not None
            location = self.claim_check.write(encoded.value)
        reduced = self.encoder.encode_handle_only(change, location)
        if reduced.size > self.message_limit:
            raise MessageTooLargeForPolicy(
                f"row of {change.table.name} with key {key}: even its key-only message is {reduced.size} "
                f"bytes, above the message limit of {self.message_limit} bytes; raise max-message-bytes"
            )
        self.stats.oversized += 1
        return reduced

    def _send_ddl(self, event: DDLEvent) -> None:
        for message in self.encoder.encode_ddl(event):
            route = message.route
            topic = self.router.default_topic.topic(event.database, "") if route is None else self.router.topic(
                route.schema, route.table)
            self._send(topic, 0, message.encoded)
        self.stats.ddl += 1

    def _send_watermarks(self, commit_ts: int) -> None:
        encoded = self.encoder.encode_watermark(commit_ts)
        for topic, partitions in self.partitions_of.items():
            for partition in range(partitions):
                self._send(topic, partition, encoded)

    def _send(self, topic: str, partition: int, encoded: Encoded) -> None:
        seq = self.tracker.sent()
        message = Message(topic, partition, encoded.key, encoded.value)
        sent_at = time.monotonic()

        def on_ack(_message: Message, error: SinkError | None) -> None:
            if error is None:
                self.tracker.acked(seq)
                if self.on_latency is not None:
                    self.on_latency(time.monotonic() - sent_at)
            else:
                log.error("delivery to %s[%d] failed: %s", topic, partition, error)
                self.tracker.failed(error)
                if self.on_failure is not None:
                    self.on_failure()

        self.sink.send(message, on_ack)
        self.stats.messages += 1
        self.stats.bytes += message.size

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self.tracker.checkpoint
