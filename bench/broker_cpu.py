"""Our broker's CPU per record, two brokers side by side in one run: its two event loops (uvloop and asyncio's),
or with `--against DIR` this checkout's broker against another checkout's (both on uvloop), to measure a change.

    .venv/bin/python bench/broker_cpu.py [--pairs 2] [--small 1000000] [--large 300000]
    git worktree add /tmp/before HEAD~1
    .venv/bin/python bench/broker_cpu.py --against /tmp/before [--cases 100:1,1024:all]

Throughput on a shared 2-core machine swings by tens of percent between runs; the broker's own CPU time per
record (utime + stime of its process, /proc/PID/stat) swings much less, so a change to the broker's request
path shows there first. Per pair, per side in turn (the first side first in odd pairs, second in even ones),
for 100 B and 1 KiB records at acks=1 and acks=all on a fresh one-partition topic: Kafka's
`kafka-producer-perf-test` sends the records as fast as it can (linger.ms=5, the default 16 KiB batches: one
Produce request per ~16 KiB, so the per-request path weighs), then `kafka-consumer-perf-test` reads them back;
the table gives the broker's CPU microseconds per record for each, the median over the pairs, and the ratio
of the first side to the second. `--against` runs the other checkout's broker with its directory first on
PYTHONPATH (the same virtualenv).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from lakefeed_testing.own_broker import OwnBroker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _kafka_perf import _consume, _produce, _topic
from _many_partitions import process_cpu_seconds


@dataclass(frozen=True)
class Side:
    label: str
    loop: str
    code: str | None = None  # a checkout whose broker runs instead of this one's


def _case(side: Side, size: int, records: int, acks: str) -> tuple[float, float, float]:
    """(produce CPU us/record, produce MB/s, consume CPU us/record) of one broker."""
    broker = OwnBroker(Path(tempfile.mkdtemp(prefix="broker-cpu-")), event_loop=side.loop, code=side.code)
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
@click.option("--pairs", default=2, show_default=True, help="rounds of both sides, in turn")
@click.option("--small", default=1_000_000, show_default=True, help="100 B records per case")
@click.option("--large", default=300_000, show_default=True, help="1 KiB records per case")
@click.option("--against", type=click.Path(exists=True, file_okay=False, resolve_path=True),
              help="another checkout: compare this checkout's broker with its broker (both on uvloop)")
@click.option("--cases", default="100:1,100:all,1024:1,1024:all", show_default=True,
              help="SIZE:ACKS pairs, comma-separated")
def main(pairs: int, small: int, large: int, against: str | None, cases: str) -> None:
    """Print the broker's CPU per record on two sides: uvloop vs asyncio, or this checkout vs --against."""
    sides = ((Side("this checkout", "uvloop"), Side(Path(against).name, "uvloop", against)) if against
             else (Side("uvloop", "uvloop"), Side("asyncio", "asyncio")))
    chosen = []
    for text in cases.split(","):
        size_text, sep, acks = text.partition(":")
        if not sep or acks not in ("1", "all") or not size_text.isdigit():
            raise click.BadParameter(f"{text!r} is not SIZE:ACKS (ACKS 1 or all)", param_hint="--cases")
        size = int(size_text)
        chosen.append((size, small if size < 1024 else large, acks))
    got: dict[tuple[int, str, str], list[tuple[float, float, float]]] = {}
    for pair in range(1, pairs + 1):
        for side in sides if pair % 2 else sides[::-1]:
            for size, records, acks in chosen:
                click.echo(f"pair {pair} of {pairs}: {side.label}, {size} B, acks={acks} ...", err=True)
                got.setdefault((size, acks, side.label), []).append(_case(side, size, records, acks))
    first, second = (side.label for side in sides)
    click.echo(f"| case | metric | {first} (median; pairs) | {second} (median; pairs) | {first}/{second} |")
    click.echo("|---|---|---:|---:|---:|")
    for size, _, acks in chosen:
        for index, metric in ((0, "broker CPU us/record, produce"), (1, "produce MB/s"),
                              (2, "broker CPU us/record, consume")):
            cells = []
            for side in sides:
                values = [run[index] for run in got[(size, acks, side.label)]]
                cells.append((statistics.median(values), values))
            text = [f"{m:.2f} ({', '.join(f'{v:.2f}' for v in vs)})" for m, vs in cells]
            click.echo(f"| {size} B, acks={acks} | {metric} | {text[0]} | {text[1]} | "
                       f"{cells[0][0] / cells[1][0]:.2f}x |")


if __name__ == "__main__":
    main()
