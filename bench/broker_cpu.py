"""Our broker's CPU per record on its two event loops (uvloop and asyncio's), side by side in one run.

    .venv/bin/python bench/broker_cpu.py [--pairs 2] [--small 1000000] [--large 300000]

Throughput on a shared 2-core machine swings by tens of percent between runs; the broker's own CPU time per
record (utime + stime of its process, /proc/PID/stat) swings much less, so a change to the broker's request
path shows there first. Per pair, per loop in turn (`broker start --event-loop`), for 100 B and 1 KiB records
at acks=1 and acks=all on a fresh one-partition topic: Kafka's `kafka-producer-perf-test` sends the records
as fast as it can (linger.ms=5, the default 16 KiB batches: one Produce request per ~16 KiB, so the per-request
path weighs), then `kafka-consumer-perf-test` reads them back; the table gives the broker's CPU microseconds
per record for each, the median over the pairs, and the ratio uvloop / asyncio.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import click

from lakefeed_testing.own_broker import OwnBroker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _kafka_perf import _consume, _produce, _topic
from _many_partitions import process_cpu_seconds

LOOPS = ("uvloop", "asyncio")


def _case(loop: str, size: int, records: int, acks: str) -> tuple[float, float, float]:
    """(produce CPU us/record, produce MB/s, consume CPU us/record) of one broker on `loop`."""
    broker = OwnBroker(Path(tempfile.mkdtemp(prefix="broker-cpu-")), event_loop=loop)
    broker.start()
    try:
        assert broker.process is not None
        pid, topic = broker.process.pid, _topic(broker.bootstrap)
        _produce(broker.bootstrap, topic, 20_000, size, -1, ["acks=1"])  # the producer's connections, warm
        before = process_cpu_seconds(pid)
        produced = _produce(broker.bootstrap, topic, records, size, -1, [f"acks={acks}", "linger.ms=5"])
        middle = process_cpu_seconds(pid)
        _consume(broker.bootstrap, topic, records + 20_000)
        after = process_cpu_seconds(pid)
        return (middle - before) / records * 1e6, float(produced.group(1)), (after - middle) / records * 1e6
    finally:
        broker.stop()


@click.command()
@click.option("--pairs", default=2, show_default=True, help="rounds of both loops, in turn")
@click.option("--small", default=1_000_000, show_default=True, help="100 B records per case")
@click.option("--large", default=300_000, show_default=True, help="1 KiB records per case")
def main(pairs: int, small: int, large: int) -> None:
    """Print the broker's CPU per record on uvloop and on asyncio's loop."""
    cases = [(size, records, acks) for size, records in ((100, small), (1024, large)) for acks in ("1", "all")]
    got: dict[tuple[int, str, str], list[tuple[float, float, float]]] = {}
    for pair in range(1, pairs + 1):
        for loop in LOOPS:
            for size, records, acks in cases:
                click.echo(f"pair {pair} of {pairs}: {loop}, {size} B, acks={acks} ...", err=True)
                got.setdefault((size, acks, loop), []).append(_case(loop, size, records, acks))
    click.echo("| case | metric | uvloop (median; pairs) | asyncio (median; pairs) | uvloop/asyncio |")
    click.echo("|---|---|---:|---:|---:|")
    for size, _, acks in cases:
        for index, metric in ((0, "broker CPU us/record, produce"), (1, "produce MB/s"),
                              (2, "broker CPU us/record, consume")):
            cells = []
            for loop in LOOPS:
                values = [run[index] for run in got[(size, acks, loop)]]
                cells.append((statistics.median(values), values))
            text = [f"{m:.2f} ({', '.join(f'{v:.2f}' for v in vs)})" for m, vs in cells]
            click.echo(f"| {size} B, acks={acks} | {metric} | {text[0]} | {text[1]} | "
                       f"{cells[0][0] / cells[1][0]:.2f}x |")


if __name__ == "__main__":
    main()
