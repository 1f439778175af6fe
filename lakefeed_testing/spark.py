"""A local SparkSession with Delta Lake and Spark's Kafka source, jars from Maven Central via Ivy."""

import contextlib
import hashlib
import importlib.metadata
import os
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.paths import cache_dir, ivy_dir

IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
SPARK_KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
# Maven Central (as reachable here) has no spark-token-provider-kafka-0-10 after 4.0.0, although
# spark-sql-kafka 4.2.0 depends on 4.2.0. The module only handles Kafka delegation tokens and its API
# has not changed since 3.x, so we exclude the missing version and pin the newest released one.
# (`spark.jars.excludes` would drop an explicit package too, so that jar comes in through spark.jars.)
TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13"
TOKEN_PROVIDER_URL = (
    "https://repo1.maven.org/maven2/org/apache/spark/spark-token-provider-kafka-0-10_2.13/4.0.0/"
    "spark-token-provider-kafka-0-10_2.13-4.0.0.jar"
)


def token_provider_jar() -> Path:
    """The pinned token-provider jar, downloaded once into the cache and checked against its SHA-1."""
    jar = cache_dir() / "jars" / TOKEN_PROVIDER_URL.rsplit("/", 1)[1]
    if jar.exists():
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(TOKEN_PROVIDER_URL, timeout=60) as response:
        content = response.read()
    with urllib.request.urlopen(TOKEN_PROVIDER_URL + ".sha1", timeout=60) as response:
        expected = response.read().decode().split()[0]
    if hashlib.sha1(content).hexdigest() != expected:
        raise ServiceError(f"checksum mismatch for {TOKEN_PROVIDER_URL}", retriable=True)
    partial = jar.with_suffix(".part")
    partial.write_bytes(content)
    partial.rename(jar)
    return jar


def delta_package() -> str:
    """Delta's jar for the installed delta-spark wheel, the same one `configure_spark_with_delta_pip` asks for."""
    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_2.13:{importlib.metadata.version('delta-spark')}"


def package_conf() -> dict[str, str]:
    """Delta SQL extension and catalog, Delta and the Kafka source from Maven Central through the
    persistent Ivy cache, and the pinned token-provider jar: what the local session and `spark-submit`
    both need (docs/development.md, "Pinned versions")."""
    return {
        "spark.jars.packages": f"{delta_package()},{SPARK_KAFKA_PACKAGE}",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.jars.ivy": str(ivy_dir()),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
        "spark.jars.excludes": TOKEN_PROVIDER,
        "spark.jars": str(token_provider_jar()),
    }


def loopback_conf() -> dict[str, str]:
    """Small and local: no UI, few partitions, the driver on 127.0.0.1, UTC."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.databricks.delta.snapshotPartitions": "2",
    }


def spark_submit_args(conf: dict[str, str] | None = None) -> list[str]:
    """`--conf k=v` arguments for `spark-submit` with the same packages and settings as the local session."""
    merged = {**package_conf(), **loopback_conf(), **(conf or {})}
    return [arg for key, value in merged.items() for arg in ("--conf", f"{key}={value}")]


def build_spark_session(app_name: str = "lakefeed-tests", master: str = "local[2]") -> Any:
    """Start (or return the running) SparkSession: Delta SQL extension and catalog, Kafka source,
    persistent Ivy cache, no UI, few shuffle partitions (tests move kilobytes, not gigabytes)."""
    from pyspark.sql import SparkSession

    # Loopback only: tests and the demo never listen on other interfaces.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warehouse = tempfile.mkdtemp(prefix="lakefeed-warehouse-")
    builder = SparkSession.builder.appName(app_name).master(master)
    conf = {**package_conf(), **loopback_conf(), "spark.sql.warehouse.dir": warehouse, "spark.driver.memory": "2g"}
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextlib.contextmanager
def spark_session(app_name: str = "lakefeed-tests") -> Iterator[Any]:
    spark = build_spark_session(app_name)
    try:
        yield spark
    finally:
        spark.stop()
