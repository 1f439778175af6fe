"""Deliver Messages with confluent-kafka: idempotent, acknowledged per message, bounded memory.

Delivery reports drive acknowledgement; a poll thread serves them so `send` never waits on the
network except when the in-flight memory quota is full. librdkafka's own retries are bounded by
`message.timeout.ms`; retrying beyond that is the changefeed's job (with backoff it can cancel).
"""

import logging
import threading
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from sink.base import AckCallback
from sink.errors import DeliveryError, MessageTooLargeError, SinkClosedError, SinkError
from sink.message import Message
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
            "linger.ms": 5,
            # Produce batches stay under the effective limit (already net of batch overhead), so a
            # broker or topic with a small max.message.bytes never refuses a whole batch.
            "batch.size": max(1024, min(message_limit, 16 * 1024 * 1024)),
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
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
        self._lock = threading.Condition()
        self._in_flight_bytes = 0
        self._in_flight = 0
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll_loop, name="kafka-sink-poll", daemon=True)
        self._poller.start()

    @property
    def in_flight_bytes(self) -> int:
        """Bytes of messages sent and not yet acknowledged, bounded by the memory quota."""
        return self._in_flight_bytes

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def send(self, message: Message, on_ack: AckCallback) -> None:
        size = message.size  # computed once: this is the per-row hot path
        if size > self.message_limit:
            raise MessageTooLargeError(
                f"message of {size} bytes for {message.topic}[{message.partition}] exceeds the "
                f"limit of {self.message_limit} bytes"
            )
        with self._lock:
            while (
                self._in_flight_bytes + size > self.memory_quota and self._in_flight > 0 and not self._closed.is_set()
            ):
                self._lock.wait(0.1)
            if self._closed.is_set():
                raise SinkClosedError("sink is closed")
            self._in_flight_bytes += size
            self._in_flight += 1

        def delivered(error: Any, _record: Any) -> None:
            with self._lock:
                self._in_flight_bytes -= size
                self._in_flight -= 1
                self._lock.notify_all()
            on_ack(message, None if error is None else classify(error))

        while True:
            try:
                self._producer.produce(
                    message.topic,
                    value=message.value,
                    key=message.key,
                    partition=message.partition,
                    headers=list(message.headers) or None,
                    on_delivery=delivered,
                )
                return
            except BufferError:
                if self._closed.wait(0.05):
                    delivered(KafkaError(KafkaError._PURGE_QUEUE), None)
                    return
            except KafkaException as exc:
                delivered(exc.args[0], None)
                return

    def flush(self, timeout: float) -> int:
        remaining: int = self._producer.flush(timeout)
        return remaining

    def close(self) -> None:
        """Drop whatever is queued or in flight (reported as SinkClosedError) and stop, at once."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            self._lock.notify_all()
        try:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
        except (KafkaException, RuntimeError) as exc:  # already-failed producer: nothing to purge
            log.debug("purge on close failed: %s", exc)
        self._producer.flush(0)
        self._poller.join(timeout=1.0)

    def _poll_loop(self) -> None:
        while not self._closed.is_set():
            self._producer.poll(0.1)
