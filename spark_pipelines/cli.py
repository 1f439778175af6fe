"""The `spark-pipeline` command line."""

import logging
import sys
from pathlib import Path

import click

from spark_pipelines.config import load_config
from spark_pipelines.errors import PipelineError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="spark-pipeline")
def main() -> None:
    """Spark jobs that apply canal-JSON topics to Delta tables."""


@main.command()
@click.option("--config", "config_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Pipeline YAML (source, target, checkpoint, trigger).")
@click.option("--once", is_flag=True, help="Apply what the topics hold now, then stop (availableNow).")
@click.option("--master", default=None, help="Spark master when not under spark-submit (default local[2]).")
def run(config_file: Path, once: bool, master: str | None) -> None:
    """Keep one Delta table per MySQL table equal to it, from the changefeed's topics.

    Exit codes: 0 done (with --once) or stopped, 2 bad config, 1 the query failed.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        config = load_config(config_file)
    except PipelineError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    from spark_pipelines.io.kafka import read_stream
    from spark_pipelines.jobs.apply import start_query
    from spark_pipelines.session import get_or_build_session

    spark = get_or_build_session(master=master)
    spark.sparkContext.setLogLevel("WARN")
    query = start_query(spark, read_stream(spark, config.source), config, once=once)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    except Exception as exc:
        click.echo(f"error: the pipeline stopped: {str(exc).splitlines()[0]}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
