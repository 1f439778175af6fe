"""Deliver Messages with confluent-kafka: idempotent, acknowledged per message, bounded memory.

With `transactional-id` in the sink URI every source transaction is one Kafka transaction: the first batch
after a boundary begins it, `transaction_done` commits it, and its batches are acknowledged (so the
checkpoint moves) only after the commit. A new instance's init_transactions fences an older one and aborts
whatever it left open, so after a crash read_committed consumers never see half a source transaction.
Cost: one commit (EndTxn, a marker per partition written to) per source transaction: docs/benchmarks.md.

Delivery reports drive acknowledgement, one callback per batch; the sending thread serves them after
each batch and a poll thread while the sender is idle, so `send_batch` never waits on the network
except when the in-flight memory quota is full. librdkafka's own retries are bounded by
`message.timeout.ms`; retrying beyond that is the changefeed's job (with backoff it can cancel).
"""

import logging
import threading
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from sink.base import BatchCallback
from sink.errors import DeliveryError, MessageTooLargeError, SinkClosedError, SinkError
from sink.message import MessageBatch
from sink.uri import KafkaSinkConfig

log = logging.getLogger(__name__)

_ACKS = {-1: "all", 0: "0", 1: "1"}
_CLOSED_CODES = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT}
_TOO_LARGE_CODES = {KafkaError.MSG_SIZE_TOO_LARGE}


def producer_settings(config: KafkaSinkConfig, message_limit: int, delivery_timeout_ms: int) -> dict[str, Any]:
    settings = config.client_config()
    settings.update(
        {
            "enable.idempotence": config.required_acks == -1,
            "acks": _ACKS[config.required_acks],
            "compression.type": config.compression,
            # librdkafka checks whole messages against this before sending; our own size check comes first.
            "message.max.bytes": max(message_limit + 1024, 1_000_000),
            "message.timeout.ms": delivery_timeout_ms,
            # The delivery path produces a whole transaction's batch in one tight loop, so librdkafka needs
            # little lingering to fill its requests; 1 ms instead of 5 took ~4 ms off the commit -> ack p50
            # at 2,000 rows/s with the same throughput (docs/benchmarks.md).
            "linger.ms": 1,
            # Produce batches stay under the effective limit (already net of batch overhead), so a
            # broker or topic with a small max.message.bytes never refuses a whole batch.
            "batch.size": max(1024, min(message_limit, 16 * 1024 * 1024)),
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    if config.transactional_id:
        settings["transactional.id"] = config.transactional_id
        settings["enable.idempotence"] = True
    return settings


def classify(error: Any) -> SinkError:
    """Turn a librdkafka KafkaError into our error with the right retriable flag."""
    code = error.code()
    text = f"{error.name()}: {error.str()}"
    if code in _CLOSED_CODES:
        return SinkClosedError(f"sink closed before delivery ({text})")
    if code in _TOO_LARGE_CODES:
        return MessageTooLargeError(f"broker refused the message as too large ({text})")
    retriable = bool(error.retriable()) or code in (
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
    )
    # A fatal error ends this producer instance (e.g. the idempotent producer's state was lost when a
    # broker restarted without its data); a new producer from the last checkpoint can go on.
    return DeliveryError(f"delivery failed ({text})", retriable=retriable or bool(error.fatal()))


# The sending thread serves delivery reports itself (one poll after each batch); the poll thread
# serves them only once the sender has been idle this long (waiting for the next binlog event), so the
# two do not take the GIL from each other for every report while rows stream.
POLL_HANDOVER_S = 0.002


class _BatchAck:
    """Counts one batch's delivery reports down; reports the first error at once, success at the end."""

    __slots__ = ("count", "error", "left", "on_ack", "sink", "size")

    def __init__(self, sink: "KafkaSink", batch: MessageBatch, on_ack: BatchCallback) -> None:
        self.sink = sink
        self.size = batch.size
        self.count = self.left = len(batch.messages)
        self.on_ack = on_ack
        self.error: SinkError | None = None

    def report(self, error: Any, _record: Any) -> None:
        # Reports may be served by the sending thread and the poll thread at once: count under a lock.
        sink = self.sink
        first: SinkError | None = None
        with sink._report_lock:
            self.left -= 1
            if error is not None and self.error is None:
                first = self.error = classify(error)
            done = self.left == 0
        if first is not None:
            self.on_ack(first)
        if done:
            sink._release(self.size, self.count)
            if self.error is None:
                self.on_ack(None)


class KafkaSink:
    """A Sink (sink.base.Sink) over confluent-kafka."""

    def __init__(
        self,
        config: KafkaSinkConfig,
        *,
        message_limit: int | None = None,
        memory_quota: int = 64 * 1024 * 1024,
        delivery_timeout_ms: int = 30_000,
    ) -> None:
        self.config = config
        self.message_limit = message_limit or config.max_message_bytes
        self.memory_quota = memory_quota
        self._producer = Producer(producer_settings(config, self.message_limit, delivery_timeout_ms))
        self._transactional = bool(config.transactional_id)
        self._in_transaction = False
        self._uncommitted: list[BatchCallback] = []  # acknowledgements held until the commit
        if self._transactional:
            try:
                self._producer.init_transactions(max(delivery_timeout_ms, 10_000) / 1000)
            except KafkaException as exc:
                raise classify(exc.args[0]) from None
        self._lock = threading.Lock()
        self._report_lock = threading.Lock()
        self._in_flight_bytes = 0
        self._in_flight = 0
        self._sending = False
        self._last_sent = time.monotonic()
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll_loop, name="kafka-sink-poll", daemon=True)
        self._poller.start()

    @property
    def in_flight_bytes(self) -> int:
        """Bytes of messages sent and not yet acknowledged, bounded by the memory quota."""
        return self._in_flight_bytes

    @property
    def in_flight(self) -> int:
        """Messages sent and not yet acknowledged (counted per batch: a batch leaves when all of it has)."""
        return self._in_flight

    def send_batch(self, batch: MessageBatch, on_ack: BatchCallback) -> None:
        """Produce every message of the batch in order, then serve the delivery reports already due.

        Memory: a batch waits while the bytes in flight would pass `memory_quota` (TiCDC's
        memory-quota), unless nothing is in flight (a batch larger than the quota still goes, alone)."""
        if batch.largest > self.message_limit:
            raise MessageTooLargeError(
                f"a message of {batch.largest} bytes for {batch.messages[0].topic} exceeds the "
                f"limit of {self.message_limit} bytes"
            )
        if not batch.messages:
            on_ack(None)
            return
        producer = self._producer
        self._sending = True
        try:
            while True:
                with self._lock:
                    if self._closed.is_set():
                        raise SinkClosedError("sink is closed")
                    if self._in_flight == 0 or self._in_flight_bytes + batch.size <= self.memory_quota:
                        self._in_flight_bytes += batch.size
                        self._in_flight += len(batch.messages)
                        break
                producer.poll(0.05)  # serve reports here: acknowledgements free the quota
            if self._transactional:
                if not self._in_transaction:
                    self._producer.begin_transaction()
                    self._in_transaction = True
                on_ack = self._hold(on_ack)
            report = _BatchAck(self, batch, on_ack).report
            produce = producer.produce
            for message in batch.messages:
                while True:
                    try:
                        if message.headers:
                            produce(message.topic, message.value, message.key, message.partition,
                                    on_delivery=report, headers=list(message.headers))
                        else:
                            produce(message.topic, message.value, message.key, message.partition, on_delivery=report)
                        break
                    except BufferError:  # librdkafka's own queue is full: let acknowledgements drain it
                        if self._closed.is_set():
                            report(KafkaError(KafkaError._PURGE_QUEUE), None)
                            break
                        producer.poll(0.05)
                    except KafkaException as exc:
                        report(exc.args[0], None)
                        break
            if self._closed.is_set():  # closed while producing: what was queued after close's purge goes too
                producer.purge(in_queue=True, in_flight=True, blocking=False)
            producer.poll(0)
        finally:
            self._last_sent = time.monotonic()
            self._sending = False

    def _hold(self, on_ack: BatchCallback) -> BatchCallback:
        """A transactional batch's acknowledgement: errors at once, success only at the commit."""
        def report(error: SinkError | None) -> None:
            if error is not None:
                on_ack(error)
            else:
                with self._report_lock:
                    self._uncommitted.append(on_ack)
        return report

    def transaction_done(self) -> None:
        if not self._transactional or not self._in_transaction:
            return
        producer = self._producer
        self._in_transaction = False
        try:
            producer.commit_transaction()  # flushes first: every delivery report is served before it returns
        except KafkaException as exc:
            error = classify(exc.args[0])
            log.warning("committing the Kafka transaction failed (%s); aborting it", error)
            try:
                producer.abort_transaction()
            except KafkaException as abort_error:
                log.warning("aborting the Kafka transaction failed too: %s", abort_error.args[0])
            self._acknowledge(DeliveryError(f"Kafka transaction not committed: {error}", retriable=True))
            return
        self._acknowledge(None)

    def _acknowledge(self, error: SinkError | None) -> None:
        with self._report_lock:
            held, self._uncommitted = self._uncommitted, []
        for on_ack in held:
            on_ack(error)

    def _release(self, size: int, count: int) -> None:
        with self._lock:
            self._in_flight_bytes -= size
            self._in_flight -= count

    def flush(self, timeout: float) -> int:
        remaining: int = self._producer.flush(timeout)
        return remaining

    def close(self) -> None:
        """Drop whatever is queued or in flight (reported as SinkClosedError) and stop, at once."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
        except (KafkaException, RuntimeError) as exc:  # already-failed producer: nothing to purge
            log.debug("purge on close failed: %s", exc)
        self._producer.flush(0)
        self._poller.join(timeout=1.0)

    def _poll_loop(self) -> None:
        while not self._closed.is_set():
            idle = time.monotonic() - self._last_sent
            if self._sending or idle < POLL_HANDOVER_S:
                self._closed.wait(POLL_HANDOVER_S)
                continue
            self._producer.poll(0.01)
