"""Small Java programs the tests run against Kafka's or Flink's jars: the JDK's tools and one compile step,
cached per source and class path."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from lakefeed_testing.errors import ServiceError


def java_tool(name: str, package: str, purpose: str) -> str:
    """The path of `java` or `javac`, or a ServiceError naming the Debian package that has it."""
    path = shutil.which(name)
    if path is None:
        raise ServiceError(f"`{name}` (Java 17) is needed for {purpose}: `apt-get install {package}`")
    return path


def compiled(source: Path, libs: Path, cache: Path, main_class: str, purpose: str) -> Path:
    """The directory holding `main_class`.class compiled from `source` against `libs/*`, under `cache` (a
    directory per source content and class path). Compiled into a staging directory then renamed, so a
    run stopped mid-compile never leaves half a directory behind."""
    digest = hashlib.sha256(source.read_bytes() + str(libs).encode()).hexdigest()[:16]
    classes = cache / f"classes-{digest}"
    if (classes / f"{main_class}.class").exists():
        return classes
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache, prefix=".staging-"))
    javac = java_tool("javac", "openjdk-17-jdk-headless", purpose)
    result = subprocess.run([javac, "-d", str(staging), "-cp", f"{libs}/*", str(source)], capture_output=True,
                            text=True, timeout=300)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise ServiceError(f"javac could not compile {source.name} for {purpose}:\n{result.stderr[-3000:]}")
    if classes.exists():  # compiled meanwhile by another run
        shutil.rmtree(staging, ignore_errors=True)
    else:
        staging.rename(classes)
    return classes
