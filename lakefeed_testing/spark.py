"""A local SparkSession with Delta Lake and Spark's Kafka source, jars from Maven Central via Ivy."""

import contextlib
import hashlib
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


def build_spark_session(app_name: str = "lakefeed-tests", master: str = "local[2]") -> Any:
    """Start (or return the running) SparkSession: Delta SQL extension and catalog, Kafka source,
    persistent Ivy cache, no UI, few shuffle partitions (tests move kilobytes, not gigabytes)."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    # Loopback only: tests and the demo never listen on other interfaces.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warehouse = tempfile.mkdtemp(prefix="lakefeed-warehouse-")
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.jars.ivy", str(ivy_dir()))
        .config("spark.jars.ivySettings", str(IVY_SETTINGS))
        .config("spark.jars.excludes", TOKEN_PROVIDER)
        .config("spark.jars", str(token_provider_jar()))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    return configure_spark_with_delta_pip(builder, extra_packages=[SPARK_KAFKA_PACKAGE]).getOrCreate()


@contextlib.contextmanager
def spark_session(app_name: str = "lakefeed-tests") -> Iterator[Any]:
    spark = build_spark_session(app_name)
    try:
        yield spark
    finally:
        spark.stop()
