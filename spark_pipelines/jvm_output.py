"""The driver JVM's stdout and stderr as Python log records.

A JVM that pyspark starts inherits the terminal: Ivy's dependency report (printed by `spark-submit`'s
package resolution before log4j is up) and log4j's lines in their own format land between the
pipeline's lines. We give the JVM one pipe instead and read it here: a log4j line (Spark's default
pattern `%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m`, Spark's conf/log4j2.properties.template) becomes a record
of logger `spark.jvm` at its level; anything else (Ivy's report, stack-trace lines) a DEBUG record of
`spark.launcher`, shown with `--verbose`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass

JVM = logging.getLogger("spark.jvm")
LAUNCHER = logging.getLogger("spark.launcher")
_LOG4J = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ([^:\s]+): (.*)$")
_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
           "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
# Said at every start of a local session and harmless: shown only with --verbose.
_ROUTINE = ("NativeCodeLoader", "Utils", "SparkContext", "SparkSession", "ResolveWriteToStream", "SparkStringUtils",
            "MapPartitionsRDD")


def relay_line(line: str) -> None:
    match = _LOG4J.match(line)
    if match is None:
        LAUNCHER.debug("%s", line)
        return
    level, name, message = match.groups()
    severity = _LEVELS[level]
    if severity < logging.ERROR and name in _ROUTINE:
        severity = logging.DEBUG
    elif name == "MicroBatchExecution" and "terminated with error" in message:
        severity = logging.DEBUG  # the runner says why on one line (spark_pipelines/runner.py); --verbose shows it
    JVM.log(severity, "%s: %s", name, message, extra={"jvm_logger": name})


@dataclass
class JvmOutput:
    """The pipe the JVM writes to (`fd`, its write end) and the thread that reads it."""

    fd: int
    thread: threading.Thread

    @classmethod
    def start(cls) -> JvmOutput:
        read_fd, write_fd = os.pipe()
        thread = threading.Thread(target=_read, args=(read_fd,), name="jvm-output", daemon=True)
        thread.start()
        return cls(write_fd, thread)

    def launched(self) -> None:
        """The JVM holds its own copy of the write end now; close ours so the reader sees EOF when it exits."""
        os.close(self.fd)


def _read(fd: int) -> None:
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if line.strip():
                relay_line(line.rstrip("\n"))
