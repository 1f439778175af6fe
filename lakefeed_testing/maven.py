"""Resolve a pom.xml's runtime jars once with Maven into a directory of the persistent cache; shared by
every Java tool the tests run (the Kafka reference, Flink's canal-json format).

Maven's local repository is ours (`<cache>/m2`), not `~/.m2`: Maven stores a bare .pom for artifacts it
only reads metadata of (jsr305 for Flink, say), and Spark's default Ivy chain looks in `~/.m2` first
(`local-m2-cache`), finds that .pom, expects the jar beside it and fails the whole resolution
("download failed: com.google.code.findbugs#jsr305;3.0.2!jsr305.jar"); `spark-pipelines`' Connect
server resolves with that default chain."""

import shutil
import subprocess
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.paths import cache_dir


def copy_dependencies(pom: Path, libs: Path, what: str) -> Path:
    """`libs` holding every runtime jar `pom` names; downloaded on first use, then reused."""
    marker = libs / ".complete"
    if marker.exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServiceError(f"Maven (`mvn`) is needed to fetch the {what} jars: `apt-get install maven`")
    libs.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime",
         f"-DoutputDirectory={libs}", f"-Dmaven.repo.local={cache_dir() / 'm2'}"],
        capture_output=True, text=True, timeout=1200,
    )
    if result.returncode != 0:
        raise ServiceError(f"mvn could not fetch the {what} jars:\n{result.stdout[-3000:]}", retriable=True)
    marker.touch()
    return libs
