"""The file `spark-submit` runs on a cluster:

    spark-submit --master spark://HOST:7077 [packages and conf, docs/spark-pipelines.md] \\
        "$(python -c 'import spark_pipelines.submit as s; print(s.__file__)')" run --config F [--once]

spark-submit has already started the driver JVM with the cluster's master, packages and conf; this
file makes the SparkSession from them (so `spark-pipeline run` does not build its local one) and then
runs the ordinary command line, with the same options and exit codes.
"""

import sys
from pathlib import Path

# Python puts a script's own directory first on sys.path. Here that is the package directory, whose
# modules (io/, config.py, errors.py, ...) would then shadow the standard library and load twice.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

from pyspark.sql import SparkSession  # noqa: E402  (after the sys.path fix above)

from spark_pipelines.cli import main  # noqa: E402


def submit() -> None:
    SparkSession.builder.appName("lakefeed-pipeline").getOrCreate()
    main()


if __name__ == "__main__":
    submit()
