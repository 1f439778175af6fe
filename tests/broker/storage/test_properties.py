"""Hypothesis: append / read / truncate / roll / delete-records / retention / compaction / reopen
against a list-of-records model."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol import records
from broker.storage.cleaner import clean
from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog
from broker.storage.record_view import iter_records
from broker.storage.retention import apply_retention
from tests.broker.storage.batches import record_batch
from tests.broker.storage.test_log import read_bytes

CONFIG = StorageConfig(segment_bytes=600, index_interval_bytes=100, retention_ms=-1, retention_bytes=-1)
KEYS = st.sampled_from([b"a", b"b", b"c", b"d"])
OPS = st.one_of(
    st.tuples(st.just("append"), st.tuples(
        st.lists(st.tuples(KEYS, st.binary(min_size=1, max_size=30)), min_size=1, max_size=4),
        st.sampled_from(["none", "none", "gzip", "snappy", "lz4", "zstd"]),  # the cleaner decodes them all
    )),
    st.tuples(st.just("truncate"), st.integers(0, 40)),
    st.tuples(st.just("roll"), st.none()),
    st.tuples(st.just("delete_before"), st.integers(0, 40)),
    st.tuples(st.just("retention"), st.integers(200, 1500)),
    st.tuples(st.just("compact"), st.none()),
    st.tuples(st.just("reopen"), st.booleans()),
)


def contents(log: DiskPartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = read_bytes(log.read(offset, 1 << 16))
        if not data:
            break
        for header in records.iter_batches(data):  # CRC must still hold
            batch = data[header.position : header.position + header.length]
            out += [(r.offset, r.key, r.value) for r in iter_records(batch, header) if r.offset >= offset]
            offset = header.base_offset + header.last_offset_delta + 1
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, max_size=25))
def test_log_behaves_like_a_list_of_records(ops: list[tuple[str, object]]) -> None:
    directory = Path(tempfile.mkdtemp(prefix="lakefeed-prop-"))
    try:
        log = DiskPartitionLog(directory, CONFIG)
        model: list[tuple[int, bytes | None, bytes | None]] = []
        start = end = 0
        for op, arg in ops:
            if op == "append":
                assert isinstance(arg, tuple)
                entries, codec = arg
                result = log.append(record_batch(entries, compression=codec), leader_epoch=0)
                assert result.base_offset == end
                model += [(end + i, k, v) for i, (k, v) in enumerate(entries)]
                end += len(entries)
            elif op == "truncate":
                assert isinstance(arg, int)
                if arg < start:
                    continue
                before = contents(log)
                log.truncate_to(arg)
                assert log.log_end_offset <= arg or end <= arg, ops
                end = log.log_end_offset
                model = [r for r in before if r[0] < end]
                start = log.log_start_offset
            elif op == "roll":
                if log.segments[-1].size:
                    log.roll()
            elif op == "delete_before":
                assert isinstance(arg, int)
                start = log.delete_records_before(arg)
                assert start == max(min(arg, end), start)
                model = [r for r in model if r[0] >= start]
            elif op == "retention":
                assert isinstance(arg, int)
                log.config = StorageConfig(**{**_fields(CONFIG), "retention_bytes": arg})
                apply_retention(log)
                log.config = CONFIG
                start = log.log_start_offset
                assert start <= log.high_watermark
                model = [r for r in model if r[0] >= start]
            elif op == "compact":
                active = log.segments[-1].base_offset
                latest = {k: o for o, k, _ in model}
                clean(log, delete_retention_ms=10**12)
                model = [r for r in model if r[0] >= active or latest[r[1]] == r[0]]  # type: ignore[index]
            elif op == "reopen":
                if arg:
                    log.close()
                else:
                    for segment in log.segments:  # crash: no flush, no marker
                        segment.close()
                log = DiskPartitionLog(directory, CONFIG)
                start = log.log_start_offset
            assert log.log_end_offset == end
            assert log.log_start_offset == start
            assert contents(log) == model
        log.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _fields(config: StorageConfig) -> dict[str, object]:
    return {name: getattr(config, name) for name in config.__slots__}  # type: ignore[attr-defined]
