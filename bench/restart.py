"""Broker restart time against the number of segments: `broker start` on a data dir of P partitions x S segments.

    PYTHONPATH=. .venv/bin/python bench/restart.py [--partitions 1000] [--segments 5,10] [--rounds 2]

For each segment count, the data dir is built once (a real `broker start` creates the topic; the segments
of one partition are then written with the storage layer while the broker is stopped, each segment a few
1 KiB-record batches, and copied to every other partition without fsync), then the broker is started
`--rounds` times after a clean shutdown and once after a simulated crash (clean-shutdown markers removed,
so recovery CRC-checks every segment). Reported: seconds from process start until the listener accepts,
and the "partition logs loaded" seconds the broker logs (the parallel start-up loading, one thread per
core); a run whose broker loaded fewer partitions, or whose last partition lacks records, fails.
Restart time should grow at most linearly with segments.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.storage.config import StorageConfig
from broker.storage.log import CLEAN_SHUTDOWN, DiskPartitionLog
from lakefeed_testing.net import free_port, port_open
from tests.broker.kio_wire import record_batch

TOPIC = "restart-bench"
SEGMENT_BYTES = 16 * 1024
BATCH = record_batch([b"x" * 1024] * 4)  # ~4 KiB: four batches fill a segment


def _start(data_dir: Path, port: int, log_path: Path) -> tuple[subprocess.Popen[bytes], float]:
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(data_dir),
               "--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
    started = time.monotonic()
    with log_path.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = started + 600
    while not port_open(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"broker did not start; see {log_path}")
        time.sleep(0.02)
    return process, time.monotonic() - started


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=120)


def _loaded_seconds(log_path: Path, partitions: int) -> float:
    for line in log_path.read_text().splitlines():
        if '"partition logs loaded"' in line:
            entry = json.loads(line)
            if entry["partitions"] < partitions:
                raise SystemExit(f"broker loaded {entry['partitions']} of {partitions} partitions; see {log_path}")
            return float(entry["seconds"])
    raise SystemExit(f"no 'partition logs loaded' line in {log_path}")


def _check_last(port: int, partitions: int, end_offset: int) -> None:
    """The last partition (a copy of the first) serves every record: the broker read the copied files."""
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "restart-bench"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partitions - 1), timeout=30)
    finally:
        consumer.close()
    if (low, high) != (0, end_offset):
        raise SystemExit(f"partition {partitions - 1}: offsets {low}..{high}, expected 0..{end_offset}")


def _restart(data_dir: Path, log_path: Path, partitions: int, end_offset: int) -> tuple[float, float]:
    """Seconds until the listener accepts and the broker's own loading seconds, after checking the data."""
    port = free_port()
    process, seconds = _start(data_dir, port, log_path)
    try:
        _check_last(port, partitions, end_offset)
    finally:
        _stop(process)
    return seconds, _loaded_seconds(log_path, partitions)


def _build(root: Path, partitions: int, segments: int) -> tuple[Path, int]:
    """The data dir and each partition's log end offset."""
    data_dir, port = root / "data", free_port()
    process, _ = _start(data_dir, port, root / "create.log")
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic(TOPIC, partitions, 1, config={"segment.bytes": str(SEGMENT_BYTES)})])[
            TOPIC].result(120)
    finally:
        _stop(process)
    # One partition is written with the storage layer (its fsyncs are few), then its files are copied to
    # every other partition without fsync: this is a bench fixture, the page cache is enough (the broker is
    # stopped; a restart reads the same bytes). The files do not depend on the partition's number (no
    # producer ids, the same offsets and epochs), so every copy is a valid log. Writing all partitions with
    # the storage layer spent minutes in per-segment fsyncs at 1,000 partitions on this shared disk.
    template = data_dir / f"{TOPIC}-0"
    shutil.rmtree(template)
    log = DiskPartitionLog(template, StorageConfig(segment_bytes=SEGMENT_BYTES))
    while len(log.segments) <= segments:  # the last one is the (nearly empty) active segment
        log.append(BATCH, leader_epoch=0)
    end_offset = log.log_end_offset
    log.close()
    files = sorted(template.iterdir())
    for index in range(1, partitions):
        target = data_dir / f"{TOPIC}-{index}"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        for source in files:
            shutil.copyfile(source, target / source.name)
    return data_dir, end_offset


@click.command()
@click.option("--partitions", default=1000, show_default=True)
@click.option("--segments", default="5,10", show_default=True, help="comma-separated segment counts")
@click.option("--rounds", default=2, show_default=True, help="clean restarts per segment count (best is shown)")
def main(partitions: int, segments: str, rounds: int) -> None:
    rows = []
    for count in (int(s) for s in segments.split(",")):
        with tempfile.TemporaryDirectory(prefix="restart-bench-") as tmp:
            root = Path(tmp)
            print(f"building {partitions} partitions x {count} segments ...", flush=True)
            data_dir, end_offset = _build(root, partitions, count)
            clean = [_restart(data_dir, root / f"clean-{i}.log", partitions, end_offset) for i in range(rounds)]
            for marker in data_dir.glob(f"{TOPIC}-*/{CLEAN_SHUTDOWN}"):
                marker.unlink()  # as after kill -9: every segment is CRC-checked
            crash = _restart(data_dir, root / "crash.log", partitions, end_offset)
            best = min(clean)
            print(f"  clean {[f'{c[0]:.2f} ({c[1]:.2f})' for c in clean]}, crash {crash[0]:.2f} ({crash[1]:.2f})",
                  flush=True)
            rows.append((count, best[0], best[1], crash[0], crash[1]))
    print("\n| partitions x segments | clean restart s (loading s) | after a crash s (loading s) |\n|---|---:|---:|")
    for count, clean_s, clean_load, crash_s, crash_load in rows:
        print(f"| {partitions} x {count} | {clean_s:.2f} ({clean_load:.2f}) | {crash_s:.2f} ({crash_load:.2f}) |")


if __name__ == "__main__":
    main()
