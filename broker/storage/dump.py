"""Text dumps of `.log`, `.index`, `.timeindex`, `.txnindex` and `.snapshot` files in the layout of Kafka's
DumpLogSegments."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import crc32c

from broker.protocol import control, records
from broker.protocol.errors import KafkaApiError
from broker.storage import codecs, offset_index, producer_state, time_index, txn_index
from broker.storage.record_view import iter_records
from broker.storage.segment import scan

_DELETE_HORIZON_FLAG = 0x40


def _record_lines(data: bytes, header: records.BatchHeader, print_data: bool) -> Iterator[str]:
    log_append = header.attributes & records.LOG_APPEND_TIME_FLAG
    for record in iter_records(data, header):
        offset, timestamp, key, value = record.offset, record.timestamp, record.key, record.value
        keys = record.header_keys
        sequence = -1 if header.base_sequence < 0 else header.base_sequence + offset - header.base_offset
        stamp = f"LogAppendTime: {header.max_timestamp}" if log_append else f"CreateTime: {timestamp}"
        line = (f"| offset: {offset} {stamp} keySize: {-1 if key is None else len(key)} "
                f"valueSize: {-1 if value is None else len(value)} sequence: {sequence} "
                f"headerKeys: [{','.join(keys)}]")
        if header.is_control:  # kafka-dump-log decodes markers with --deep-iteration too
            line += _control_text(data)
        elif print_data:
            if key is not None:
                line += f" key: {key.decode('utf-8', 'replace')}"
            if value is not None:
                line += f" payload: {value.decode('utf-8', 'replace')}"
        yield line


def _control_text(batch: bytes) -> str:
    try:
        marker = control.decode_marker(batch)
    except KafkaApiError:
        return " unknown control record"
    return f" endTxnMarker: {'COMMIT' if marker.commit else 'ABORT'} coordinatorEpoch: {marker.coordinator_epoch}"


def _batch_line(header: records.BatchHeader, valid: bool) -> str:
    stamp_kind = "LogAppendTime" if header.attributes & records.LOG_APPEND_TIME_FLAG else "CreateTime"
    horizon = (f"OptionalLong[{header.base_timestamp}]" if header.attributes & _DELETE_HORIZON_FLAG
               else "OptionalLong.empty")
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.base_offset + header.last_offset_delta} "
        f"count: {header.record_count} baseSequence: {header.base_sequence} "
        f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
        f"producerEpoch: {header.producer_epoch} partitionLeaderEpoch: {header.leader_epoch} "
        f"isTransactional: {str(header.is_transactional).lower()} "
        f"isControl: {str(header.is_control).lower()} deleteHorizonMs: {horizon} "
        f"position: {header.position} {stamp_kind}: {header.max_timestamp} size: {header.length} "
        f"magic: {header.magic} compresscodec: {codecs.NAMES.get(header.compression, 'unknown')} "
        f"crc: {header.crc} isvalid: {str(valid).lower()}"
    )


def dump_log(path: Path, deep: bool, print_data: bool) -> Iterator[str]:
    yield f"Log starting offset: {int(path.stem)}"
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        end = 0
        for header in scan(fd, 0, size, verify=False):
            data = os.pread(fd, header.length, header.position)
            valid = crc32c.crc32c(data[21:]) == header.crc
            yield _batch_line(header, valid)
            if deep or print_data:
                yield from _record_lines(data, header, print_data)
            end = header.position + header.length
        if end < size:
            yield f"Found {size - end} invalid bytes at the end of {path.name}"
    finally:
        os.close(fd)


def dump_index(path: Path) -> Iterator[str]:
    base = int(path.stem)
    if path.stat().st_size < offset_index.ENTRY.size:
        yield f"{path} is empty."
        return
    entries = offset_index.ENTRY.iter_unpack(_whole_entries(path, offset_index.ENTRY))
    for i, (relative, position) in enumerate(entries):
        if relative == 0 and i > 0:
            break  # the preallocated, zero-filled tail of an active Kafka index
        yield f"offset: {base + relative} position: {position}"


def dump_time_index(path: Path) -> Iterator[str]:
    base = int(path.stem)
    if path.stat().st_size < time_index.ENTRY.size:
        yield f"{path} is empty."
        return
    for i, (stamp, relative) in enumerate(time_index.ENTRY.iter_unpack(_whole_entries(path, time_index.ENTRY))):
        if relative == 0 and i > 0:
            break
        yield f"timestamp: {stamp} offset: {base + relative}"


def dump_txn_index(path: Path) -> Iterator[str]:
    entries, intact = txn_index.parse(path.read_bytes())
    for entry in entries:
        yield (f"version: {txn_index.VERSION} producerId: {entry.producer_id} firstOffset: {entry.first_offset} "
               f"lastOffset: {entry.last_offset} lastStableOffset: {entry.last_stable_offset}")
    if not intact:
        raise ValueError(f"{path}: not a transaction index (a partial entry or a version other than 0)")


def _whole_entries(path: Path, entry: struct.Struct) -> bytes:
    data = path.read_bytes()
    return data[: len(data) - len(data) % entry.size]


def dump_file(path: Path, deep: bool, print_data: bool) -> Iterator[str]:
    """Lines for one file; raises ValueError for names DumpLogSegments does not know."""
    if not path.stem.isdigit():
        raise ValueError(f"{path}: expected a segment file named <20-digit offset>.log/.index/.timeindex/.txnindex")
    yield f"Dumping {path}"
    if path.suffix == ".log":
        yield from dump_log(path, deep, print_data)
    elif path.suffix == ".index":
        yield from dump_index(path)
    elif path.suffix == ".timeindex":
        yield from dump_time_index(path)
    elif path.suffix == ".txnindex":
        yield from dump_txn_index(path)
    elif path.suffix == ".snapshot":
        yield from dump_snapshot(path)
    else:
        raise ValueError(f"{path}: unsupported file type {path.suffix!r}; use .log, .index, .timeindex, .txnindex"
                         " or .snapshot")


def dump_snapshot(path: Path) -> Iterator[str]:
    rows = producer_state.snapshot_rows(path.read_bytes())
    if rows is None:
        raise ValueError(f"{path}: not a producer-state snapshot (wrong version, size or CRC-32C)")
    for pid, epoch, last_seq, last_offset, delta, stamp, coordinator_epoch, txn_first in rows:
        txn = "OptionalLong.empty" if txn_first < 0 else f"OptionalLong[{txn_first}]"
        line = (f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
                f"currentTxnFirstOffset: {txn} lastTimestamp: {stamp}")
        if last_offset >= 0:  # an entry whose epoch a marker bumped has no batch yet: Kafka prints none
            line += (f" firstSequence: {last_seq - delta} lastSequence: {last_seq} lastOffset: {last_offset} "
                     f"offsetDelta: {delta} timestamp: {stamp}")
        yield line
