"""kcat (librdkafka CLI) lists metadata, produces and consumes through our broker."""

from __future__ import annotations

import subprocess

from tests.broker.conftest import BrokerProcess


def _kcat(broker: BrokerProcess, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        ["kcat", "-b", broker.bootstrap, *args], input=stdin, capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_kcat_produce_consume_and_list(broker: BrokerProcess, topic_name: str) -> None:
    lines = [f"line-{i}" for i in range(50)]
    _kcat(broker, "-P", "-t", topic_name, stdin="\n".join(lines) + "\n")
    consumed = _kcat(broker, "-C", "-t", topic_name, "-o", "beginning", "-e", "-f", "%o %s\\n")
    assert consumed.splitlines() == [f"{i} line-{i}" for i in range(50)]
    listing = _kcat(broker, "-L", "-t", topic_name)
    assert f'topic "{topic_name}" with 1 partitions' in listing
    assert f"broker 1 at {broker.bootstrap}" in listing
    keyed = _kcat(broker, "-C", "-t", topic_name, "-o", "-5", "-e", "-f", "%s\\n")
    assert keyed.splitlines() == lines[-5:]
