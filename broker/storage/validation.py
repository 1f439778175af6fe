"""Checks on batches before anything is written: the Kafka error each problem maps to."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.protocol import records
from broker.protocol.errors import KafkaApiError


def validate_batches(data: bytes | bytearray | memoryview, max_message_bytes: int) -> list[records.BatchHeader]:
    """Every batch header, or KafkaApiError (CORRUPT_MESSAGE / INVALID_RECORD / MESSAGE_TOO_LARGE)."""
    if len(data) == 0:
        raise KafkaApiError(ErrorCode.corrupt_message, "empty record set: send at least one RecordBatch")
    headers = list(records.iter_batches(data))
    for header in headers:
        if header.length > max_message_bytes:
            raise KafkaApiError(
                ErrorCode.message_too_large,
                f"record batch of {header.length} bytes exceeds max.message.bytes={max_message_bytes}",
            )
        if header.record_count == 0:
            raise KafkaApiError(ErrorCode.invalid_record, "record batch has no records")
        if header.compression == 0 and header.record_count != header.last_offset_delta + 1:
            raise KafkaApiError(
                ErrorCode.invalid_record,
                f"record count {header.record_count} != lastOffsetDelta+1 ({header.last_offset_delta + 1})",
            )
        if header.producer_id >= 0 and (header.producer_epoch < 0 or header.base_sequence < 0):
            raise KafkaApiError(
                ErrorCode.invalid_record,
                f"idempotent batch (producerId {header.producer_id}) needs producerEpoch and baseSequence >= 0",
            )
    return headers
