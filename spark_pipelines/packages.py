"""The jars a local pipeline session needs: Delta Lake and Spark's Kafka source from Maven Central.

`spark-submit` users pass the same packages on its command line (docs/spark-pipelines.md); a session
`spark-pipeline run` builds itself asks for them through Spark's `spark.jars.packages` (Spark
configuration guide, "Runtime Environment"), resolved by Ivy into a persistent cache so only the
first start downloads them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import urllib.request
from pathlib import Path

from spark_pipelines.errors import PipelineError

# Maven Central only: Spark's default resolver chain also asks repos.spark-packages.org, which
# nothing we use lives on and which a machine without general internet access cannot reach.
IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
SPARK_KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
# Maven Central has no spark-token-provider-kafka-0-10 after 4.0.0, although spark-sql-kafka 4.2.0
# depends on 4.2.0. The module only handles Kafka delegation tokens and its API has not changed since
# 3.x, so we exclude the missing version and pin the newest released one. (`spark.jars.excludes` would
# drop an explicit package too, so that jar comes in through spark.jars.)
TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13"
TOKEN_PROVIDER_URL = (
    "https://repo1.maven.org/maven2/org/apache/spark/spark-token-provider-kafka-0-10_2.13/4.0.0/"
    "spark-token-provider-kafka-0-10_2.13-4.0.0.jar"
)


def cache_dir() -> Path:
    """`$LAKEFEED_CACHE`, else `~/.cache/lakefeed`: downloaded jars survive clean clones and restarts."""
    root = Path(os.environ.get("LAKEFEED_CACHE", Path.home() / ".cache" / "lakefeed"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def ivy_dir() -> Path:
    return cache_dir() / "ivy"


def token_provider_jar() -> Path:
    """The pinned token-provider jar, downloaded once into the cache and checked against its SHA-1."""
    jar = cache_dir() / "jars" / TOKEN_PROVIDER_URL.rsplit("/", 1)[1]
    if jar.exists():
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(TOKEN_PROVIDER_URL, timeout=60) as response:
            content = response.read()
        with urllib.request.urlopen(TOKEN_PROVIDER_URL + ".sha1", timeout=60) as response:
            expected = response.read().decode().split()[0]
    except OSError as exc:
        raise PipelineError(f"cannot download {TOKEN_PROVIDER_URL}: {exc}; check access to Maven Central "
                            f"or put the jar at {jar}", retriable=True) from exc
    if hashlib.sha1(content).hexdigest() != expected:
        raise PipelineError(f"checksum mismatch for {TOKEN_PROVIDER_URL}", retriable=True)
    partial = jar.with_suffix(".part")
    partial.write_bytes(content)
    partial.rename(jar)
    return jar


def delta_package() -> str:
    """Delta's jar for the installed delta-spark wheel, the one `configure_spark_with_delta_pip` asks for."""
    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_2.13:{importlib.metadata.version('delta-spark')}"


def package_conf() -> dict[str, str]:
    """Delta SQL extension and catalog (Delta docs, "Configure SparkSession"), Delta and the Kafka source
    through the persistent Ivy cache, and the pinned token-provider jar: what a local session and
    `spark-submit` both need (docs/development.md, "Pinned versions")."""
    return {
        "spark.jars.packages": f"{delta_package()},{SPARK_KAFKA_PACKAGE}",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.jars.ivy": str(ivy_dir()),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
        "spark.jars.excludes": TOKEN_PROVIDER,
        "spark.jars": str(token_provider_jar()),
    }
