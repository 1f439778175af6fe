"""The whole test suite as two pytest processes side by side (README command 2, `scripts/test.sh`).

The suite spends most of its time waiting (session timeouts, JVM starts, Spark jobs on two threads, fault
rounds): the 2026-12-03 CI run used 25 CPU-minutes in 46 wall-clock minutes on two cores. So it runs as two
streams at once (`LAKEFEED_TEST_STREAM`, chosen per test in tests/conftest.py):

- `broker`: tests under tests/broker that need neither Spark nor MariaDB (our broker, its clients, clusters);
- `rest`: every other test (Spark, MariaDB, the changefeed, the pipelines, the examples).

Both streams share one Apache Kafka reference, started here (`LAKEFEED_KAFKA_REFERENCE` tells tests/conftest.py
where it runs), so a run still starts one MariaDB, one Spark session and one Kafka reference. Each stream has its
own pytest temporary root (`PYTEST_DEBUG_TEMPROOT`), its output lines prefixed with its name, and the run fails
when either fails. `LAKEFEED_TEST_STREAMS=1` runs one pytest process instead (what to use with `--junitxml`,
`--pdb` or `-s`, which two processes would fight over).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

from lakefeed_testing.kafka_reference import KafkaReference, kafka_reference

STREAMS = ("broker", "rest")
NO_TESTS_COLLECTED = 5  # pytest's exit code when a stream's selection is empty: not a failure of the run
_SUMMARY = re.compile(r"\b(passed|failed|errors?|deselected|no tests ran)\b.* in [0-9.]+s")  # pytest's closing line


def reference_env(reference: KafkaReference) -> str:
    return f"{reference.port}:{reference.data_dir}"


def parse_reference_env(value: str) -> KafkaReference:
    """The shared reference named by `LAKEFEED_KAFKA_REFERENCE` ("<port>:<data dir>")."""
    port, separator, data_dir = value.partition(":")
    if not separator or not port.isdigit() or not data_dir:
        raise ValueError(
            f"LAKEFEED_KAFKA_REFERENCE={value!r}: expected '<port>:<data dir>', e.g. '9092:/tmp/kafka/logs'"
        )
    return KafkaReference(port=int(port), data_dir=Path(data_dir))


def _relay(name: str, source: IO[str], lock: threading.Lock, summary: dict[str, str]) -> None:
    for line in source:
        stripped = line.rstrip("\n")
        if _SUMMARY.search(stripped):
            summary[name] = stripped.strip("= ")
        with lock:
            sys.stdout.write(f"[{name}] {stripped}\n")
            sys.stdout.flush()


def run_streams(pytest_args: Sequence[str], temp_root: Path) -> int:
    """Run both streams to the end; 0 when neither failed."""
    env_base = dict(os.environ)
    lock = threading.Lock()
    summary: dict[str, str] = {}
    procs: dict[str, subprocess.Popen[str]] = {}
    relays: list[threading.Thread] = []
    for name in STREAMS:
        root = temp_root / name
        root.mkdir(parents=True, exist_ok=True)
        env = env_base | {"LAKEFEED_TEST_STREAM": name, "PYTEST_DEBUG_TEMPROOT": str(root)}
        proc = subprocess.Popen([sys.executable, "-m", "pytest", *pytest_args], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1)
        procs[name] = proc
        assert proc.stdout is not None
        relay = threading.Thread(target=_relay, args=(name, proc.stdout, lock, summary), daemon=True)
        relay.start()
        relays.append(relay)

    def stop(signum: int, _frame: object) -> None:
        # Only raise here: the handler runs inside proc.wait(), which holds the Popen's wait lock, so waiting
        # for the streams happens below, once that wait has been left.
        raise _Terminated(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        codes = {name: proc.wait() for name, proc in procs.items()}
    except (KeyboardInterrupt, _Terminated) as stopped:
        _interrupt(procs.values())
        if isinstance(stopped, _Terminated):
            raise SystemExit(128 + stopped.signum) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    for relay in relays:
        relay.join(10)
    for name in STREAMS:
        print(f"== stream {name}: exit {codes[name]}: {summary.get(name, '(no summary line)')}")
    ran = [code for code in codes.values() if code != NO_TESTS_COLLECTED]
    if not ran:
        return NO_TESTS_COLLECTED
    return 0 if all(code == 0 for code in ran) else 1


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _interrupt(procs: Iterable[subprocess.Popen[str]]) -> None:
    """Ctrl-C for every stream, then wait for them: pytest's own teardown stops what its fixtures started,
    and the shared Kafka reference must outlive them."""
    running = list(procs)
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
    for proc in running:
        proc.wait()


@contextlib.contextmanager
def _shared_reference() -> Iterator[None]:
    if "LAKEFEED_KAFKA_REFERENCE" in os.environ:  # given by the caller: theirs to stop
        yield
        return
    started = time.monotonic()
    with kafka_reference() as reference:
        os.environ["LAKEFEED_KAFKA_REFERENCE"] = reference_env(reference)
        print(f"== Apache Kafka reference for both streams on 127.0.0.1:{reference.port} "
              f"(up in {time.monotonic() - started:.1f} s)", flush=True)
        try:
            yield
        finally:
            del os.environ["LAKEFEED_KAFKA_REFERENCE"]


def main(argv: Sequence[str]) -> int:
    if os.environ.get("LAKEFEED_TEST_STREAMS", "2") == "1":
        return subprocess.call([sys.executable, "-m", "pytest", *argv])
    temp_root = Path(os.environ.get("LAKEFEED_TEST_TEMP", "/tmp/lakefeed-pytest"))
    with _shared_reference():
        return run_streams(argv, temp_root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
