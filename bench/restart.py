"""Broker restart time against the number of segments: `broker start` on a data dir of P partitions x S segments.

    PYTHONPATH=. .venv/bin/python bench/restart.py [--partitions 1000] [--segments 5,10] [--rounds 2]

For each segment count, the data dir is built once (a real `broker start` creates the topic; the segments
are then written with the storage layer while the broker is stopped, each segment a few 1 KiB-record
batches), then the broker is started `--rounds` times after a clean shutdown and once after a simulated
crash (clean-shutdown markers removed, so recovery CRC-checks every segment). Reported: seconds from
process start until the listener accepts, and the "partition logs loaded" seconds the broker logs (the
parallel start-up loading, one thread per core). Restart time should grow at most linearly with segments.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
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


def _loaded_seconds(log_path: Path) -> float:
    for line in log_path.read_text().splitlines():
        if '"partition logs loaded"' in line:
            return float(json.loads(line)["seconds"])
    return float("nan")


def _build(root: Path, partitions: int, segments: int) -> Path:
    data_dir, port = root / "data", free_port()
    process, _ = _start(data_dir, port, root / "create.log")
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        admin.create_topics([NewTopic(TOPIC, partitions, 1, config={"segment.bytes": str(SEGMENT_BYTES)})])[
            TOPIC].result(120)
    finally:
        _stop(process)
    config = StorageConfig(segment_bytes=SEGMENT_BYTES)
    for index in range(partitions):
        log = DiskPartitionLog(data_dir / f"{TOPIC}-{index}", config)
        log.background = lambda flush: None  # building only: close() fsyncs everything once
        while len(log.segments) <= segments:  # the last one is the (nearly empty) active segment
            log.append(BATCH, leader_epoch=0)
        log.close()
    return data_dir


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
            data_dir = _build(root, partitions, count)
            clean: list[tuple[float, float]] = []
            for i in range(rounds):
                process, seconds = _start(data_dir, free_port(), root / f"clean-{i}.log")
                _stop(process)
                clean.append((seconds, _loaded_seconds(root / f"clean-{i}.log")))
            for marker in data_dir.glob(f"{TOPIC}-*/{CLEAN_SHUTDOWN}"):
                marker.unlink()  # as after kill -9: every segment is CRC-checked
            process, crash = _start(data_dir, free_port(), root / "crash.log")
            _stop(process)
            best = min(clean)
            rows.append((count, best[0], best[1], crash, _loaded_seconds(root / "crash.log")))
    print("\n| partitions x segments | clean restart s (loading s) | after a crash s (loading s) |\n|---|---:|---:|")
    for count, clean_s, clean_load, crash_s, crash_load in rows:
        print(f"| {partitions} x {count} | {clean_s:.2f} ({clean_load:.2f}) | {crash_s:.2f} ({crash_load:.2f}) |")


if __name__ == "__main__":
    main()
