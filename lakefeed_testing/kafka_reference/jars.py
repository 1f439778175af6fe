"""Resolve the Kafka jars once with Maven into the persistent cache."""

import re
import shutil
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.maven import copy_dependencies
from lakefeed_testing.paths import cache_dir

POM = Path(__file__).with_name("pom.xml")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
_VERSION = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
assert _VERSION is not None, "pom.xml must set kafka.version"
KAFKA_VERSION = _VERSION.group(1)


def ensure_kafka_libs() -> Path:
    """The directory holding every jar the Kafka broker and tools need; downloaded on first use."""
    return copy_dependencies(POM, cache_dir() / f"kafka-{KAFKA_VERSION}", f"Kafka {KAFKA_VERSION}")


def java_command(main_class: str, *, heap: str = "256m") -> list[str]:
    libs = ensure_kafka_libs()
    java = shutil.which("java")
    if java is None:
        raise ServiceError("Java 17 is needed for Apache Kafka: `apt-get install openjdk-17-jre-headless`")
    return [
        java, f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        "-cp", f"{libs}/*", main_class,
    ]
