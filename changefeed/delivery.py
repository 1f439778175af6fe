"""Capture events -> canal-JSON messages -> sink, with the checkpoint following acknowledgements.

This is the data path of one changefeed: split key-changing updates, encode, route, enforce the
message limit, send in batches (one per transaction, or per BATCH_MESSAGES / BATCH_BYTES within a
large one), and advance the checkpoint only over acknowledged transactions: a transaction's boundary
is queued behind the last batch holding any of its messages. DDL goes to
partition 0 of the table's topic, one message per touched table; watermarks (TiDB extension) go to
every partition of every topic seen.
"""

import logging
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
from sink.message import Message, MessageBatch

log = logging.getLogger(__name__)

# A batch closes at each transaction commit (so the checkpoint never waits for a later transaction)
# or at these bounds, which keep a huge transaction's pending messages small next to memory-quota.
BATCH_MESSAGES = 500
BATCH_BYTES = 1 << 20


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
        self.on_latency = on_latency  # send-to-acknowledgement seconds of each batch (metrics)
        self.tracker = MessageAckTracker(start)
        self.stats = DeliveryStats()
        self._transactions = 0
        self._pending: list[Message] = []  # encoded, not yet handed to the sink
        self._pending_bytes = 0
        self._pending_largest = 0

    def run(self, events: Iterable[CaptureEvent]) -> None:
        for event in events:
            error = self.tracker.error
            if error is not None:
                raise error
            if isinstance(event, RowChange):
                if self.output_raw_change_event:
                    self._send_row(event)
                else:
                    for change in split_key_changing_update(event):
                        self._send_row(change)
                if len(self._pending) >= BATCH_MESSAGES or self._pending_bytes >= BATCH_BYTES:
                    self._flush()
            elif isinstance(event, DDLEvent):
                # A DDL is a batch of its own, after every change before it (TiCDC writes DDL once the DML
                # before it is flushed): the rows after it fill whole batches again.
                self._flush()
                self.sink.transaction_done()
                self._send_ddl(event)
                self._flush()
                self.sink.transaction_done()
            elif isinstance(event, TransactionCommit):
                # Sent before the boundary is queued: the checkpoint waits for this transaction's batch.
                self._flush()
                self.tracker.transaction_done(event.checkpoint)
                self.sink.transaction_done()  # a transactional sink commits it (and acknowledges) here
                self._transactions += 1
                if self.watermark_every and self._transactions % self.watermark_every == 0:
                    self._send_watermarks(event.checkpoint.commit_ts)
                    self._flush()
                    self.sink.transaction_done()
        self._flush()
        self.sink.transaction_done()

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
        """Queue one message for the next batch; its size is computed here, once."""
        message = Message(topic, partition, encoded.key, encoded.value)
        size = message.size
        self._pending.append(message)
        self._pending_bytes += size
        if size > self._pending_largest:
            self._pending_largest = size
        self.stats.messages += 1
        self.stats.bytes += size  # counted here, per row, for the runner's per-table statistics

    def _flush(self) -> None:
        """Send the pending messages as one batch, acknowledged (and tracked) as one unit."""
        if not self._pending:
            return
        batch = MessageBatch(self._pending, self._pending_bytes, self._pending_largest)
        self._pending = []
        self._pending_bytes = self._pending_largest = 0
        seq = self.tracker.sent()
        count = len(batch.messages)  # the callback must not keep the batch's messages alive until acked
        sent_at = time.monotonic()

        def on_ack(error: SinkError | None) -> None:
            if error is None:
                self.tracker.acked(seq)
                if self.on_latency is not None:
                    self.on_latency(time.monotonic() - sent_at)
            else:
                log.error("delivery of a batch of %d messages failed: %s", count, error)
                self.tracker.failed(error)
                if self.on_failure is not None:
                    self.on_failure()

        self.sink.send_batch(batch, on_ack)

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self.tracker.checkpoint
