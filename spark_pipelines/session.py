"""The SparkSession the pipeline runs on.

Three cases, in order (Spark's own rule: an application's conf comes from `spark-submit` and
`spark-defaults.conf`, and `SparkSession.builder.getOrCreate()` returns the running session, see the
pyspark `SparkSession.Builder.getOrCreate` docs):

- a session is already active (a notebook, `spark_pipelines/submit.py` under `spark-submit`), or the
  driver JVM was started by `spark-submit` (`PYSPARK_GATEWAY_PORT` is set): that session is used as it
  is. `spark.conf` from the YAML only fills what `spark-submit` left unset and only runtime settings
  (static ones, such as `spark.driver.memory`, cannot change in a running JVM: a warning names them);
- otherwise we start one: Delta and the Kafka source (spark_pipelines/packages.py), then the YAML's
  `spark.conf`, which wins over our defaults. Nothing goes to a temporary directory: the warehouse is
  whatever `spark.sql.warehouse.dir` says, and a catalog target without one is refused (a table
  registered in a throw-away warehouse would be lost by the next run).

The driver JVM we start writes Ivy's resolution report and log4j lines to a pipe that
spark_pipelines/jvm_output.py turns into Python log records, so `--log-format` covers them too.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from spark_pipelines.errors import ConfigError
from spark_pipelines.packages import package_conf

log = logging.getLogger(__name__)
WAREHOUSE = "spark.sql.warehouse.dir"
# Our defaults for a session we start; the YAML's spark.conf overrides each one.
LOCAL_DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",  # the transforms read canal-JSON times in source_time_zone
    "spark.ui.showConsoleProgress": "false",  # the progress bar garbles the one line per micro-batch
    # Merge-on-read's merger runs its jobs in a pool of its own beside the stream's (jobs/buffer_merger.py):
    # FAIR shares the cores between the pools, where FIFO would queue a micro-batch behind a merge's stages.
    "spark.scheduler.mode": "FAIR",
}


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
CODEGEN_FACTORY, INTERPRETED = "spark.sql.codegen.factoryMode", "NO_CODEGEN"
_LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)(?:,\d+)?\])?")


def local_master_conf(master: str) -> dict[str, str]:
    """Settings for a local master, nothing for any other (a cluster's operators size their own):

    - shuffle and Delta state-reconstruction partitions sized to its cores. Spark's defaults are for
      clusters: `spark.sql.shuffle.partitions` 200 and Delta's `spark.databricks.delta.snapshotPartitions`
      50 (DeltaSQLConf), so every MERGE, every batch summary and every snapshot of a table after a commit ran
      50-200 tasks of a few rows each on `local[2]`'s two threads: a warm 3-table micro-batch took about
      twice as long as with two partitions (docs/benchmarks.md, "Issue 22, seventh round"). One partition
      per core keeps both busy; adaptive execution (on by default) still splits a skewed join.
    - file listing's parallelism sized to its cores: Delta's VACUUM lists a table's directory with
      `spark.sql.sources.parallelPartitionDiscovery.parallelism` tasks (VacuumCommand.gc hands it to
      DeltaFileOperations.recursiveListDirs), Spark's default 10000, so a VACUUM of a table of a few files
      took 20-30 s on `local[2]` instead of 1-2 s (bench/vacuum.py; docs/benchmarks.md, "Issue 22, VACUUM").
      The merge-on-read merger vacuums its change buffer every hour and held its merges that long.
    - expressions evaluated by Spark's interpreter (`spark.sql.codegen.factoryMode=NO_CODEGEN`): a task
      builds the Java source of each projection, predicate and ordering it evaluates outside whole-stage
      code, then looks it up in (or compiles it into) Spark's code cache; a literal that changes from batch to
      batch (key ranges, floors) is a new class every batch. A JFR profile of the JVM in a live merge-on-read
      run at 200 rows/s had 47% of its samples there (stripping comments from the source 20%, Janino 16%),
      on micro-batches of a few hundred rows, where the interpreter costs little. A warm MERGE
      batch took 9.1 -> 7.4 s and a buffered one 2.0 -> 1.5-1.7 s (docs/benchmarks.md, "Issue 22, eleventh
      round"). Spark documents the setting as internal (its expression tests check the interpreted path
      beside the generated one); whole-stage code generation stays on, and the YAML's `spark.conf` can set
      `FALLBACK`, Spark's default, back."""
    match = _LOCAL_MASTER.fullmatch(master.strip())
    if match is None:
        return {}
    given = match.group(1)
    if given is None:
        cores = 1
    elif given == "*":
        cores = os.cpu_count() or 1
    else:
        cores = max(1, int(given))
    return {SHUFFLE_PARTITIONS: str(cores), SNAPSHOT_PARTITIONS: str(cores), LISTING_PARALLELISM: str(cores),
            CODEGEN_FACTORY: INTERPRETED}


def under_spark_submit() -> bool:
    """Whether `spark-submit` (or `pyspark`) started the driver JVM this Python process talks to."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_or_build_session(conf: Mapping[str, str] | None = None, *, master: str | None = None,
                         app_name: str = "lakefeed-pipeline", needs_warehouse: bool = False) -> Any:
    """The session to run on (module docstring). `needs_warehouse`: a catalog target will create
    databases and tables under the warehouse, so a session we start must have one configured."""
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    active = SparkSession.getActiveSession()
    if active is None and under_spark_submit():
        active = SparkSession.builder.appName(app_name).getOrCreate()
    if active is not None:
        _fill_runtime_conf(active, conf)
        return active
    if needs_warehouse and WAREHOUSE not in conf:
        raise ConfigError(f"target.database: a catalog target keeps its tables under the warehouse; set "
                          f"spark.conf.{WAREHOUSE} to a persistent directory (or run under spark-submit with it)")
    return _start(conf, master or "local[2]", app_name)


def _fill_runtime_conf(spark: Any, conf: Mapping[str, str]) -> None:
    given = spark.sparkContext.getConf()
    for key, value in conf.items():
        if given.contains(key):
            log.info("spark.conf.%s: kept the running session's value %r", key, given.get(key))
        elif spark.conf.isModifiable(key):
            spark.conf.set(key, value)
        else:
            log.warning("spark.conf.%s: ignored, the session is already running; give it to spark-submit as "
                        "--conf %s=%s", key, key, value)


def started_session_conf(conf: Mapping[str, str], master: str) -> dict[str, str]:
    """What a session we start is given, later entries winning: packages, our defaults, the local
    master's settings, then the YAML's `spark.conf`."""
    return {**package_conf(), **LOCAL_DEFAULTS, **local_master_conf(master), **conf}


def _start(conf: Mapping[str, str], master: str, app_name: str) -> Any:
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    from spark_pipelines.jvm_output import JvmOutput

    if master.startswith("local"):
        # Local mode needs no network beyond this host: bind the driver and its UI to loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1", **conf}
    spark_conf = SparkConf(loadDefaults=True).setMaster(master).setAppName(app_name)
    for key, value in started_session_conf(conf, master).items():
        spark_conf.set(key, value)
    output = JvmOutput.start()
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": output.fd, "stderr": output.fd})  # type: ignore[no-untyped-call]
    finally:
        output.launched()
    SparkContext(conf=spark_conf, gateway=gateway)
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    log.info("started Spark on %s: %s shuffle partitions, %s Delta snapshot partitions, file listing in %s tasks, "
             "expressions %s", master, spark.conf.get(SHUFFLE_PARTITIONS), spark.conf.get(SNAPSHOT_PARTITIONS),
             spark.conf.get(LISTING_PARALLELISM), spark.conf.get(CODEGEN_FACTORY, "FALLBACK"))
    return spark
