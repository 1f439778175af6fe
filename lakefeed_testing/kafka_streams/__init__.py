"""A Kafka Streams application (WordCount.java: exactly_once_v2 word count) run as its own JVM, so tests can
kill -9 it mid-transaction and start it again against our broker or Apache Kafka.

Kafka Streams comes with the Kafka reference jars (kafka-streams in ../kafka_reference/pom.xml); the source
is compiled once with javac into the cache, keyed by its digest."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.java import compiled, java_tool
from lakefeed_testing.kafka_reference import KAFKA_VERSION, ensure_kafka_libs
from lakefeed_testing.paths import cache_dir
from lakefeed_testing.processes import stop_process

SOURCE = Path(__file__).with_name("WordCount.java")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


_PURPOSE = "Kafka Streams"


def compiled_word_count(libs: Path) -> Path:
    """The directory holding WordCount.class, compiled against `libs` on first use."""
    return compiled(SOURCE, libs, cache_dir() / f"kafka-{KAFKA_VERSION}" / "streams", "WordCount", _PURPOSE)


class WordCountApp:
    """One WordCount JVM: `start()` it, `wait_running()`, then `kill()` (SIGKILL, no clean close) or `stop()`.
    Its stdout and stderr go to `log_path` (one file across restarts)."""

    def __init__(self, bootstrap: str, application_id: str, input_topic: str, output_topic: str,
                 log_path: Path, heap: str = "256m") -> None:
        self.args = [bootstrap, application_id, input_topic, output_topic]
        self.log_path = log_path
        self.heap = heap
        self.process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    def start(self, state_dir: Path) -> None:
        libs = ensure_kafka_libs()
        classes = compiled_word_count(libs)
        command = [java_tool("java", "openjdk-17-jre-headless", _PURPOSE), f"-Xmx{self.heap}", "-XX:+UseSerialGC",
                   "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                   "-cp", f"{classes}:{libs}/*", "WordCount", *self.args, str(state_dir)]
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            log.write(f"--- start, state dir {state_dir}\n".encode())
            log.flush()
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def wait_running(self, timeout: float = 60) -> None:
        """Until this start's JVM printed `STATE RUNNING`; raises if it exits or the time runs out."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                if b"STATE RUNNING" in log.read():
                    return
            if self.process.poll() is not None:
                raise ServiceError(f"WordCount exited with {self.process.returncode}:\n{self.log_text()[-4000:]}")
            time.sleep(0.1)
        raise ServiceError(f"WordCount not RUNNING after {timeout} s:\n{self.log_text()[-4000:]}")

    def kill(self) -> None:
        """kill -9: no close, no commit, the open transaction left to the coordinator."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process, timeout=15)
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None
