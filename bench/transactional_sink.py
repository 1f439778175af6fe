"""What `transactional-id` costs the changefeed's sink: the same source transactions through KafkaSink with
and without it, side by side, alternating rounds, on a fresh bundled broker (or --bootstrap).

    .venv/bin/python bench/transactional_sink.py [--transactions 2000] [--rows-per-transaction 10] [--rounds 2]

Each source transaction is one MessageBatch of `rows` canal-JSON-sized messages (400 bytes) over 3
partitions, then `transaction_done()`: a no-op for the plain sink, a Kafka commit (EndTxn; a marker per
partition written to) for the transactional one. Reported: rows/s, transactions/s and the ratio.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lakefeed_testing.own_broker import OwnBroker
from sink.kafka import KafkaSink, prepare_topic
from sink.message import Message, MessageBatch
from sink.uri import parse_sink_uri


def _round(bootstrap: str, transactional: bool, transactions: int, rows: int) -> float:
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    extra = f"&transactional-id=bench-{topic}" if transactional else ""
    config = parse_sink_uri(f"kafka://{bootstrap}/{topic}?partition-num=3{extra}")
    info = prepare_topic(config)
    sink = KafkaSink(config, message_limit=info.max_message_bytes)
    value = b"x" * 400
    acked: list[object] = []
    started = time.perf_counter()
    for t in range(transactions):
        batch = MessageBatch.of([Message(topic, i % 3, f"k{t}-{i}".encode(), value) for i in range(rows)])
        sink.send_batch(batch, acked.append)
        sink.transaction_done()
    if sink.flush(60) != 0:
        raise click.ClickException("messages left unacknowledged")
    elapsed = time.perf_counter() - started
    sink.close()
    if len(acked) != transactions or any(a is not None for a in acked):
        raise click.ClickException(f"{len(acked)} acknowledgements for {transactions} transactions")
    return elapsed


@click.command()
@click.option("--transactions", default=2000, show_default=True, help="Source transactions per round.")
@click.option("--rows-per-transaction", "rows", default=10, show_default=True, help="Messages per transaction.")
@click.option("--rounds", default=2, show_default=True, help="Alternating rounds of each.")
@click.option("--bootstrap", default=None, help="Use this broker instead of starting a bundled one.")
def main(transactions: int, rows: int, rounds: int, bootstrap: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        broker = None
        if bootstrap is None:
            broker = OwnBroker(Path(tmp))
            broker.start()
            bootstrap = broker.bootstrap
        try:
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(rounds):
                for transactional in (False, True):
                    times[transactional].append(_round(bootstrap, transactional, transactions, rows))
        finally:
            if broker is not None:
                broker.stop()
    best = {kind: min(values) for kind, values in times.items()}
    click.echo(f"{transactions} source transactions x {rows} rows, best of {rounds} rounds")
    click.echo("| sink | rows/s | transactions/s | ratio |")
    click.echo("|---|---|---|---|")
    for kind, label in ((False, "plain (idempotent, acks=all)"), (True, "transactional-id")):
        seconds = best[kind]
        click.echo(f"| {label} | {transactions * rows / seconds:,.0f} | {transactions / seconds:,.0f} |"
                   f" {best[False] / seconds:.2f} |")


if __name__ == "__main__":
    main()
