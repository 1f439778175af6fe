"""Checks on batches before anything is written: the Kafka error each problem maps to."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.protocol import records
from broker.protocol.errors import KafkaApiError
from broker.storage import codecs
from broker.storage.record_view import iter_records


def validate_batches(data: bytes | bytearray | memoryview, max_message_bytes: int,
                     client: bool = True) -> list[records.BatchHeader]:
    """Every batch header, or KafkaApiError (CORRUPT_MESSAGE / INVALID_RECORD / MESSAGE_TOO_LARGE).

    `client`: the batches come from a producer (Kafka's AppendOrigin.CLIENT), so a producer id needs a
    sequence. The coordinators' own batches (TxnOffsetCommit offsets) and a follower's copies carry a
    producer id without one, as Kafka writes them."""
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
        if header.compression:
            _check_compressed(bytes(data[header.position : header.position + header.length]), header)
        if header.is_control:
            if not header.is_transactional or header.producer_id < 0 or header.producer_epoch < 0:
                raise KafkaApiError(ErrorCode.invalid_record,
                                    "control batch must be transactional, with a producer id and epoch")
            continue  # a transaction marker takes no sequence number (base sequence -1)
        if client and header.producer_id >= 0 and (header.producer_epoch < 0 or header.base_sequence < 0):
            raise KafkaApiError(
                ErrorCode.invalid_record,
                f"idempotent batch (producerId {header.producer_id}) needs producerEpoch and baseSequence >= 0",
            )
    return headers


def _check_compressed(batch: bytes, header: records.BatchHeader) -> None:
    """Like Kafka's LogValidator, decode compressed records: the CRC only proves the bytes arrived intact."""
    codec = codecs.NAMES.get(header.compression, str(header.compression))
    try:
        deltas = [record.offset - header.base_offset for record in iter_records(batch, header)]
    except ValueError as error:  # codecs.CodecError included
        raise KafkaApiError(ErrorCode.corrupt_message, f"{codec} batch: {error}") from error
    if deltas[-1] != header.last_offset_delta:
        raise KafkaApiError(
            ErrorCode.invalid_record,
            f"{codec} batch: last record's offset delta {deltas[-1]} != lastOffsetDelta {header.last_offset_delta}",
        )
