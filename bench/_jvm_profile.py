"""A Java Flight Recorder profile of the Spark driver's JVM (local mode: it runs the tasks too), and where
its CPU samples fall.

`record(spark)` starts a recording with the JDK's "profile" settings through the JVM's own `jdk.jfr` API;
`recording.finish(path)` stops it and writes the file, which `jfr print` or JDK Mission Control read.
`sample_shares(path)` counts the execution samples (`jdk.ExecutionSample`, one per sampled running thread)
whose stack holds a frame of each group in GROUPS: issue 22's eleventh round found Spark's per-task code
generation this way (docs/benchmarks.md).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# group -> prefixes of frames (package.Class.method) that put a sample in it; a sample may be in several
GROUPS: dict[str, tuple[str, ...]] = {
    "expression code generation (Spark's generator or Janino)": (
        "org.apache.spark.sql.catalyst.expressions.codegen.", "org.codehaus.janino.", "org.codehaus.commons."),
    "  of which stripping comments from generated source": (
        "org.apache.spark.sql.catalyst.expressions.codegen.CodeFormatter$.stripExtraNewLinesAndComments",),
    "  of which Janino compiling": ("org.codehaus.janino.",),
    "Delta": ("org.apache.spark.sql.delta.", "io.delta."),
    "Parquet": ("org.apache.parquet.",),
    "JSON parsing (Jackson)": ("com.fasterxml.jackson.",),
}
_FRAME = re.compile(r"^\s+([\w.$<>]+)\(", re.M)
STACK_DEPTH = 96


@dataclass(frozen=True)
class Recording:
    handle: Any  # a jdk.jfr.Recording in the driver's JVM
    jvm: Any

    def finish(self, path: Path) -> None:
        """Stop recording and write the file."""
        self.handle.stop()
        self.handle.dump(self.jvm.java.io.File(str(path)).toPath())
        self.handle.close()


def record(spark: Any) -> Recording:
    """Start recording the driver's JVM with the JDK's "profile" settings (a sample every 10-20 ms)."""
    jvm = spark.sparkContext._jvm
    recording = jvm.jdk.jfr.Recording(jvm.jdk.jfr.Configuration.getConfiguration("profile"))
    recording.start()
    return Recording(recording, jvm)


def sample_shares(path: Path) -> tuple[int, dict[str, float]]:
    """(execution samples, group -> share of them), from `jfr print` of the recording."""
    jfr = shutil.which("jfr")
    if jfr is None:
        raise SystemExit("the JDK's `jfr` tool is not on PATH (Debian: openjdk-17-jdk-headless)")
    text = subprocess.run([jfr, "print", "--stack-depth", str(STACK_DEPTH), "--events", "jdk.ExecutionSample",
                           str(path)], check=True, capture_output=True, text=True).stdout
    samples = text.split("jdk.ExecutionSample {")[1:]
    counts = dict.fromkeys(GROUPS, 0)
    for sample in samples:
        frames = _FRAME.findall(sample)
        for group, prefixes in GROUPS.items():
            if any(frame.startswith(prefixes) for frame in frames):
                counts[group] += 1
    return len(samples), {group: count / max(1, len(samples)) for group, count in counts.items()}
