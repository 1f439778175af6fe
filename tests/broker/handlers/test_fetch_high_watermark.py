"""Consumers never see batches at or above the high watermark (the fetch handler's trim)."""

from __future__ import annotations

from broker.handlers.fetch import _below, replica_id_of
from broker.protocol import records
from tests.broker.kio_wire import record_batch


def _log(*sizes: int) -> bytes:
    """Batches as a log holds them: consecutive base offsets."""
    out, offset = bytearray(), 0
    for size in sizes:
        batch = bytearray(record_batch([b"v"] * size))
        header = next(records.iter_batches(batch))
        records.patch_batch(batch, header, offset, 0)
        out += batch
        offset += size
    return bytes(out)


def test_only_whole_batches_below_the_high_watermark_are_returned() -> None:
    data = _log(3, 2, 4)  # offsets 0-2, 3-4, 5-8
    assert _below(data, 9) == data
    kept = _below(data, 5)
    assert [h.base_offset for h in records.iter_batches(kept)] == [0, 3]
    assert _below(data, 4) == _log(3)  # the batch holding offset 4 also holds 3: it waits whole
    assert _below(data, 0) == b""


def test_replica_id_comes_from_the_body_or_replica_state() -> None:
    class Old:
        replica_id = 2

    class New:
        class replica_state:
            replica_id = 3

    class Consumer:
        pass

    assert replica_id_of(Old()) == 2
    assert replica_id_of(New()) == 3
    assert replica_id_of(Consumer()) == -1
