"""A local SparkSession for tests, benchmarks and examples: the product's session
(spark_pipelines/session.py) with small, loopback-only settings and a private warehouse that is removed
when the process exits."""

import atexit
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from spark_pipelines.packages import package_conf
from spark_pipelines.session import LOCAL_DEFAULTS, get_or_build_session, local_master_conf


def loopback_conf() -> dict[str, str]:
    """Small and local: no UI, few partitions, the driver on 127.0.0.1, UTC."""
    return {
        **LOCAL_DEFAULTS,
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        **local_master_conf("local[2]"),
        "spark.default.parallelism": "2",
    }


def spark_submit_args(conf: dict[str, str] | None = None) -> list[str]:
    """`--conf k=v` arguments for `spark-submit` with the same packages and settings as the local session."""
    merged = {**package_conf(), **loopback_conf(), **(conf or {})}
    return [arg for key, value in merged.items() for arg in ("--conf", f"{key}={value}")]


def build_spark_session(app_name: str = "lakefeed-tests", master: str = "local[2]") -> Any:
    """Start (or return the running) SparkSession: Delta, the Kafka source, no UI, few shuffle partitions
    (tests move kilobytes, not gigabytes). Its warehouse is a temporary directory deleted at exit: catalog
    tables of tests live as long as the test session."""
    warehouse = tempfile.mkdtemp(prefix="lakefeed-warehouse-")
    atexit.register(shutil.rmtree, warehouse, ignore_errors=True)
    conf = {**loopback_conf(), "spark.sql.warehouse.dir": warehouse, "spark.driver.memory": "2g"}
    return get_or_build_session(conf, master=master, app_name=app_name)


@contextlib.contextmanager
def spark_session(app_name: str = "lakefeed-tests") -> Iterator[Any]:
    spark = build_spark_session(app_name)
    try:
        yield spark
    finally:
        spark.stop()
