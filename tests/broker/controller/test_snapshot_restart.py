"""Controller start-up time and disk use stay bounded however long the metadata log gets, once it is
compacted into a snapshot: 100k records restart about as fast as 1k."""

from __future__ import annotations

import time
from pathlib import Path

from broker.controller import records as r
from broker.controller.quorum import QuorumController
from broker.controller.raft import Entry
from broker.controller.raft_storage import FileStorage

NEVER = 10**12  # a compaction threshold no test log reaches


def write_history(directory: Path, count: int) -> None:
    """A long-lived cluster's metadata log: 3 brokers, 10 topics, then `count` ISR changes, fencing and
    config changes that churn the same small state (as years of operation do)."""
    recs: list[r.Record] = [r.RegisterBroker(b, "127.0.0.1", 9090 + b, None, f"inc{b}") for b in (1, 2, 3)]
    recs += [r.CreateTopic(f"t{n}", f"id{n}", ((1, 2, 3), (2, 3, 1), (3, 1, 2))) for n in range(10)]
    epoch = 0
    while len(recs) < count:
        epoch += 1
        n = epoch % 10
        recs += [
            r.PartitionChange(f"t{n}", epoch % 3, 1, (1, 2) if epoch % 2 else (1, 2, 3), epoch, epoch),
            r.FenceBroker(3) if epoch % 2 else r.UnfenceBroker(3),
            r.ConfigChange(f"topic:t{n}", "retention.ms", str(epoch)),
        ]
    FileStorage(directory).truncate_and_append(1, [Entry(1, r.to_dict(rec)) for rec in recs[:count]])


def start(directory: Path, snapshot_bytes: int) -> tuple[float, QuorumController]:
    """Seconds to read the storage and rebuild the state from it. The election in between (a single voter
    elects itself at once, so the log is committed) is left out: its few fsyncs cost the same at any
    log length and, on a shared disk, vary more than the rest."""
    began = time.perf_counter()
    ctl = QuorumController(1, [1], FileStorage(directory), max_record_bytes_between_snapshots=snapshot_bytes)
    loaded = time.perf_counter()
    ctl.raft.tick(10_000)
    elected = time.perf_counter()
    ctl.tick(10_000)  # applies the snapshot and every committed entry (and compacts when due)
    return loaded - began + time.perf_counter() - elected, ctl


def test_restart_time_does_not_grow_with_the_records_once_compacted(tmp_path: Path) -> None:
    replay, restart, disk = {}, {}, {}
    states = {}
    for count in (1_000, 100_000):
        d = tmp_path / str(count)
        write_history(d, count)
        replay[count], full = start(d, NEVER)  # no snapshot yet: every record is read and applied
        assert full.state.applied == count and full.raft.snapshot_index == 0
        _, compacting = start(d, 1)  # this start compacts what it applied
        assert compacting.raft.snapshot_index == count + 2  # the records and two leaders' no-ops
        runs = [start(d, NEVER) for _ in range(3)]
        restart[count] = min(t for t, _ in runs)
        states[count] = runs[-1][1].state
        disk[count] = sum(p.stat().st_size for p in d.iterdir())
        assert states[count].snapshot() == full.state.snapshot() and states[count].applied == count
    print(f"\nreplay without snapshot: 1k {replay[1_000] * 1000:.1f} ms, 100k {replay[100_000] * 1000:.1f} ms; "
          f"restart from snapshot: 1k {restart[1_000] * 1000:.1f} ms, 100k {restart[100_000] * 1000:.1f} ms; "
          f"disk after compaction: 1k {disk[1_000]} B, 100k {disk[100_000]} B")
    # The snapshot holds the state (the same size for both), so the restart costs the same.
    assert restart[100_000] < 3 * max(restart[1_000], 0.005)
    assert disk[100_000] < 2 * disk[1_000]
    # Without a snapshot the start-up grows with the history.
    assert replay[100_000] > 20 * restart[100_000]


def test_the_state_is_the_snapshots_before_the_first_tick(tmp_path: Path) -> None:
    write_history(tmp_path, 100)
    _, ctl = start(tmp_path, 1)
    assert ctl.raft.snapshot_index == 101
    again = QuorumController(1, [1], FileStorage(tmp_path))
    assert again.state.snapshot() == ctl.state.snapshot() and again.status()["topics"]
