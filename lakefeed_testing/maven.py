"""Resolve a pom.xml's runtime jars once with Maven into a directory of the persistent cache; shared by
every Java tool the tests run (the Kafka reference, Flink's canal-json format).

Maven's local repository is ours (`<cache>/m2`), not `~/.m2`: Maven stores a bare .pom for artifacts it
only reads metadata of (jsr305 for Flink, say), and Spark's default Ivy chain looks in `~/.m2` first
(`local-m2-cache`), finds that .pom, expects the jar beside it and fails the whole resolution
("download failed: com.google.code.findbugs#jsr305;3.0.2!jsr305.jar"); `spark-pipelines`' Connect
server resolves with that default chain.

The jar directory is named after the pom's content (`libs-<digest>`): a dependency added to a pom (say
kafka-streams) gets a fresh, complete directory on first use instead of an old `.complete` one missing it,
and worktrees with different poms sharing one cache never rewrite or prune each other's jars (nor those of a
JVM still running from them)."""

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.paths import cache_dir


def libs_dir(pom: Path, root: Path) -> Path:
    """Where `copy_dependencies(pom, root, ...)` puts the jars: `root/libs-<digest of the pom>`."""
    return root / f"libs-{hashlib.sha256(pom.read_bytes()).hexdigest()[:16]}"


def copy_dependencies(pom: Path, root: Path, what: str) -> Path:
    """A directory under `root` holding every runtime jar `pom` names (`libs_dir`); downloaded on first
    use, then reused."""
    libs = libs_dir(pom, root)
    if (libs / ".complete").exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServiceError(f"Maven (`mvn`) is needed to fetch the {what} jars: `apt-get install maven`")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=".staging-"))
    try:
        result = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime",
             f"-DoutputDirectory={staging}", f"-Dmaven.repo.local={cache_dir() / 'm2'}"],
            capture_output=True, text=True, timeout=1200,
        )
        if result.returncode != 0:
            raise ServiceError(f"mvn could not fetch the {what} jars:\n{result.stdout[-3000:]}", retriable=True)
        (staging / ".complete").touch()
        if not (libs / ".complete").exists():  # else another run finished first: keep its directory
            shutil.rmtree(libs, ignore_errors=True)
            staging.rename(libs)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return libs
