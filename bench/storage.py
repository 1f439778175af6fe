"""Storage throughput: DiskPartitionLog append/read vs a plain sequential file write/read of the same
bytes on the same disk (the physical limit), 1 KiB records in 1 MiB batches; plus RSS over the append.

    python bench/storage.py --size-mb 256 [--rounds 3] [--dir /path/on/disk]
    python bench/storage.py --first-appends 1000

`--first-appends N`: N fresh partition logs (a new topic's partitions, opened as the broker opens them),
one small batch appended to each, then a second one to each: the first write of a new partition (or of a
new leader epoch) against a steady append, in microseconds per append, side by side.
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

import click
import crc32c

# The repository first: bench/changefeed.py and bench/broker.py would shadow the packages of those names.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.storage.config import StorageConfig
from broker.storage.log import DiskPartitionLog

RECORD = 1024
BATCH = 1 << 20
PASSES = 4  # reads from the page cache are fast: several passes make the timing meaningful


def _varint(value: int) -> bytes:
    zigzag, out = (value << 1) ^ (value >> 63), bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def one_batch(size: int = BATCH) -> bytes:
    """A RecordBatch v2 of 1 KiB values, about `size` bytes (at least one record)."""
    body, count = bytearray(), 0
    while count == 0 or len(body) + RECORD + 16 < size - 61:
        record = b"\x00" + _varint(0) + _varint(count) + _varint(-1) + _varint(RECORD) + os.urandom(RECORD) + b"\x00"
        body += _varint(len(record)) + record
        count += 1
    after = struct.pack(">hiqqqhii", 0, count - 1, 0, 0, -1, -1, -1, count) + bytes(body)
    return struct.pack(">qiibI", 0, 9 + len(after), 0, 2, crc32c.crc32c(after)) + after


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def plain_write(path: Path, batch: bytes, count: int) -> float:
    start = time.perf_counter()
    with path.open("wb") as handle:
        for _ in range(count):
            handle.write(batch)
        handle.flush()
        os.fsync(handle.fileno())
    return count * len(batch) / 2**20 / (time.perf_counter() - start)


def plain_read(path: Path, buffer: bytearray) -> float:
    start = time.perf_counter()
    fd, total = os.open(path, os.O_RDONLY), 0
    for _ in range(PASSES):
        position = 0
        while got := os.preadv(fd, [buffer], position):  # the same syscall the storage read path uses
            position += got
        total += position
    os.close(fd)
    return total / 2**20 / (time.perf_counter() - start)


def log_append(log: DiskPartitionLog, batch: bytes, count: int) -> tuple[float, float]:
    """MB/s and the peak RSS growth (MiB) over the append."""
    rss_start, rss_peak = rss_mb(), 0.0
    start = time.perf_counter()
    for i in range(count):
        log.append(batch, leader_epoch=0)
        if i % 64 == 0:
            rss_peak = max(rss_peak, rss_mb())
    log.flush()  # fsync, like the plain write
    return count * len(batch) / 2**20 / (time.perf_counter() - start), max(rss_peak, rss_mb()) - rss_start


def log_read(log: DiskPartitionLog, buffer: bytearray, per_batch: int) -> float:
    start = time.perf_counter()
    total, fds = 0, dict[str, int]()
    for _ in range(PASSES):
        offset = 0
        while offset < log.log_end_offset:
            for chunk in log.read(offset, BATCH).chunks:
                assert not isinstance(chunk, bytes)
                if chunk.path not in fds:
                    fds[chunk.path] = os.open(chunk.path, os.O_RDONLY)
                total += os.preadv(fds[chunk.path], [memoryview(buffer)[: chunk.size]], chunk.position)
            offset += per_batch
    for fd in fds.values():
        os.close(fd)
    return total / 2**20 / (time.perf_counter() - start)


def bench(directory: Path, size_mb: int, rounds: int) -> list[tuple[str, float, float]]:
    """Best of `rounds` for each side; the order alternates so page-cache writeback hits both alike."""
    batch = one_batch()
    count = max(1, size_mb * (1 << 20) // len(batch))
    buffer = bytearray(len(batch))
    best = {"ours_w": 0.0, "plain_w": 0.0, "ours_r": 0.0, "plain_r": 0.0}
    growth = 0.0
    for round_ in range(rounds):
        plain, log_dir = directory / "plain.bin", directory / "topic-0"
        for side in (("plain", "ours") if round_ % 2 == 0 else ("ours", "plain")):
            if side == "plain":
                best["plain_w"] = max(best["plain_w"], plain_write(plain, batch, count))
                best["plain_r"] = max(best["plain_r"], plain_read(plain, buffer))
                plain.unlink()
            else:
                log = DiskPartitionLog(log_dir, StorageConfig(max_message_bytes=2 * BATCH))
                speed, grown = log_append(log, batch, count)
                best["ours_w"], growth = max(best["ours_w"], speed), max(growth, grown)
                best["ours_r"] = max(best["ours_r"], log_read(log, buffer, log.log_end_offset // count))
                log.close()
                shutil.rmtree(log_dir)
    print(f"data: {count * len(batch) / 2**20:.0f} MiB per side per round, {rounds} rounds, "
          f"batches of {len(batch)} bytes; dir {directory}")
    print(f"RSS growth during the append: {growth:.1f} MiB (flat = does not grow with the data size)")
    return [("append", best["ours_w"], best["plain_w"]), ("read", best["ours_r"], best["plain_r"])]


def first_appends_of(directory: Path, partitions: int) -> tuple[float, float]:
    """Microseconds per append: the first into each of `partitions` new logs, then a second into each."""
    batch = one_batch(0)  # one 1 KiB record
    logs = [DiskPartitionLog(directory / f"t-{index}", StorageConfig()) for index in range(partitions)]
    timings = []
    for _ in range(2):
        start = time.perf_counter()
        for log in logs:
            log.append(batch, leader_epoch=0)
        timings.append((time.perf_counter() - start) / partitions * 1e6)
    for log in logs:
        log.close()
    return timings[0], timings[1]


@click.command()
@click.option("--size-mb", default=256, show_default=True, help="Bytes to append (MiB); 2048 for the 2 GiB run.")
@click.option("--rounds", default=3, show_default=True, help="Rounds; the best of each side is reported.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory on the disk to measure (default: a temp dir).")
@click.option("--first-appends", default=0, show_default=True,
              help="Instead: first vs second append into this many new partition logs.")
def main(size_mb: int, rounds: int, directory: Path | None, first_appends: int) -> None:
    """Append and read MB/s of the storage engine vs plain sequential file I/O."""
    work = Path(tempfile.mkdtemp(prefix="lakefeed-bench-", dir=directory))
    if first_appends:
        try:
            first, steady = first_appends_of(work, first_appends)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{first_appends} new partition logs, one 1-record batch each: first append {first:.0f} us, "
              f"second append {steady:.0f} us ({first / steady:.1f}x)")
        return
    try:
        rows = bench(work, size_mb, rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'op':<8}{'storage MB/s':>14}{'plain file MB/s':>17}{'ratio':>8}{'target':>8}")
    for (name, ours, plain), target in zip(rows, (0.7, 0.8), strict=True):
        print(f"{name:<8}{ours:>14.0f}{plain:>17.0f}{ours / plain:>8.2f}{target:>8.2f}")


if __name__ == "__main__":
    main()
