"""`broker start` refuses bad properties and busy or unusable data dirs: one line, exit code 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import DEFAULTS, ConfigError
from broker.config_catalog import BROKER_CONFIGS
from broker.config_checks import check_broker_properties
from broker.dev_cluster import DevCluster
from lakefeed_testing.net import free_port, port_open, wait_until


def _start(tmp_path: Path, *args: str, data_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(data_dir or tmp_path / "data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{free_port()}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize(("args", "expected"), [
    (("--set", "log.retention.hour=5"),
     "unknown broker property 'log.retention.hour'; did you mean log.retention.hours?"),
    (("--set", "num.partitions=three"), "num.partitions='three': expected an integer"),
    (("--set", "auto.create.topics.enable=yes"), "auto.create.topics.enable='yes': expected true or false"),
    (("--set", "log.segment.bytes=1GB"), "log.segment.bytes='1GB': expected an integer (sizes are plain byte counts"),
    (("--set", "num.partitions=0"), "num.partitions='0': must be at least 1"),
    (("--set", "process.roles=broker,leader"), "process.roles='broker,leader': each item must be one of broker"),
    (("--set", "listener.security.protocol.map=PLAINTEXT:TLS"),
     "listener.security.protocol.map='PLAINTEXT:TLS': entry 'PLAINTEXT:TLS' is not LISTENER:PROTOCOL"),
    (("--set", "retention.ms=1000"), "retention.ms is a topic config, not a broker property; the broker-wide default"
     " is log.retention.ms"),
], ids=["typo", "int", "bool-yes", "size-unit", "range", "roles", "protocol-map",
        "topic-config"])
def test_bad_properties_stop_the_broker_with_one_line(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    assert expected in _one_line_error(_start(tmp_path, *args))
    assert not (tmp_path / "data").exists()  # refused before anything is written


def test_a_bad_value_in_a_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text("num.partitions: 3\nlog:\n  retention:\n    hours: five\n")
    line = _one_line_error(_start(tmp_path, "--config", str(config)))
    assert "log.retention.hours='five': expected an integer" in line


def test_valid_properties_pass_and_every_default_is_valid() -> None:
    assert set(DEFAULTS) <= set(BROKER_CONFIGS)  # every property the broker reads is in the catalog
    check_broker_properties({name: d.default for name, d in BROKER_CONFIGS.items() if d.default is not None})
    check_broker_properties({"auto.create.topics.enable": "FALSE", "queued.max.request.bytes": "-1",
                             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT", "log.retention.minutes": "30"})


def test_dev_cluster_checks_its_settings_up_front(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"did you mean min\.insync\.replicas"):
        DevCluster(3, tmp_path, 20000, settings={"min.insync.replica": "2"})
    result = subprocess.run([sys.executable, "-m", "broker.cli", "dev-cluster", "--nodes", "1", "--data-dir",
                             str(tmp_path / "c"), "--set", "num.partitions=three"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "num.partitions='three'" in result.stderr and "Traceback" not in result.stderr


def test_second_broker_on_the_same_data_dir_is_refused(tmp_path: Path) -> None:
    port = free_port()
    first = subprocess.Popen([sys.executable, "-m", "broker.cli", "start", "--data-dir", str(tmp_path / "data"),
                              "--listeners", f"PLAINTEXT://127.0.0.1:{port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: first.poll() is None)
        line = _one_line_error(_start(tmp_path))
        assert f"data dir {tmp_path / 'data'} is in use by another broker process" in line
    finally:
        first.terminate()
        first.wait(timeout=15)
    # The lock goes with the process: the same dir starts again.
    port = free_port()
    again = subprocess.Popen([sys.executable, "-m", "broker.cli", "start", "--data-dir", str(tmp_path / "data"),
                              "--listeners", f"PLAINTEXT://127.0.0.1:{port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: port_open(port), timeout=20, what="broker", alive=lambda: again.poll() is None)
    finally:
        again.terminate()
        again.wait(timeout=15)


def test_an_uncreatable_data_dir_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    line = _one_line_error(_start(tmp_path, data_dir=tmp_path / "file" / "data"))
    assert f"cannot use data dir {tmp_path / 'file' / 'data'}: Not a directory" in line


@pytest.mark.parametrize(("choice", "logged"), [("auto", "event loop: uvloop"), ("asyncio", "event loop: asyncio")])
def test_the_broker_serves_clients_on_either_event_loop_and_says_which(tmp_path: Path, choice: str,
                                                                       logged: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from lakefeed_testing.own_broker import OwnBroker

    broker = OwnBroker(tmp_path, event_loop=choice)
    broker.start()
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        values = [f"v{i}".encode() * 15_000 for i in range(6)]  # one batch each; a fetch over 64 KiB: sendfile
        for value in values:
            producer.produce("loops", value)
            assert producer.flush(20) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "loops"})
        consumer.assign([TopicPartition("loops", 0, 0)])
        got: list[bytes] = []
        try:
            wait_until(lambda: got.extend(m.value() for m in consumer.consume(10, 0.2) if not m.error())
                       or len(got) >= len(values), timeout=30, what="the records back")
        finally:
            consumer.close()
        assert got == values
    finally:
        broker.stop()
    assert logged in (tmp_path / "broker-1.log").read_text()


def test_event_loop_uvloop_is_refused_where_uvloop_is_missing(tmp_path: Path) -> None:
    blocker = tmp_path / "hide" / "uvloop.py"
    blocker.parent.mkdir()
    blocker.write_text("raise ImportError('hidden for this test')\n")
    command = [sys.executable, "-m", "broker.cli", "start", "--data-dir", str(tmp_path / "data"),
               "--listeners", f"PLAINTEXT://127.0.0.1:{free_port()}", "--event-loop", "uvloop"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(blocker.parent)})
    assert result.returncode == 2 and "--event-loop uvloop: uvloop is not installed" in result.stderr
    assert not (tmp_path / "data").exists()  # refused before anything is written


def test_a_broker_process_does_not_import_hypothesis() -> None:
    """kio imports hypothesis when installed (the dev extra has it): 0.3-0.7 s of every broker start for test
    strategies the broker never uses. `python -m broker.cli` keeps it out; the same module imported by a test
    process leaves hypothesis importable."""
    probe = ("import runpy, sys; sys.argv = ['broker', 'start', '--help'];\n"
             "try:\n    runpy.run_module('broker.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hypothesis', 'pytest', 'trio')"
             " and sys.modules[m] is not None))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout[-2000:]
    imported = subprocess.run([sys.executable, "-c", "import broker.cli, hypothesis.strategies"],
                              capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr[-2000:]
