"""The `spark-pipeline` command line."""

import sys
from pathlib import Path

import click

from lakefeed_common.logs import LOG_FORMATS
from spark_pipelines.config import load_config
from spark_pipelines.errors import PipelineError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakefeed", prog_name="spark-pipeline")
def main() -> None:
    """Spark jobs that apply canal-JSON topics to Delta tables."""


@main.command()
@click.option("--config", "config_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Pipeline YAML (source, target, checkpoint, trigger, spark.conf).")
@click.option("--once", is_flag=True, help="Apply what the topics hold now, then stop (availableNow).")
@click.option("--master", default=None, help="Spark master when not under spark-submit (default local[2]).")
@click.option("--progress", "live", is_flag=True, help="Keep a live status line on stderr, rewritten in place.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve Prometheus metrics on this port (/metrics).")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address the metrics port binds.")
@click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
              help="Log lines on stderr as text or JSON objects.")
@click.option("--verbose", is_flag=True, help="Full traces, Spark's INFO lines and the jar resolution report.")
def run(config_file: Path, once: bool, master: str | None, live: bool, metrics_port: int | None, metrics_host: str,
        log_format: str, verbose: bool) -> None:
    """Keep one Delta table per MySQL table equal to it, from the changefeed's topics.

    Prints one line per micro-batch: rows applied per table, offsets behind per topic, duration and
    freshness (now minus the commit time of the newest change applied).

    Exit codes: 0 done (with --once) or stopped, 2 bad config, 1 the query failed.
    """
    from spark_pipelines.logs import configure

    configure(log_format, verbose=verbose)
    try:
        config = load_config(config_file)
    except PipelineError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    from spark_pipelines.runner import run_pipeline

    sys.exit(run_pipeline(config, once=once, master=master, live=live, metrics_port=metrics_port,
                          metrics_host=metrics_host, verbose=verbose))


@main.command()
@click.option("--config", "config_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The pipeline's YAML: which tables, and where their Delta tables are.")
@click.option("--source", "source_uri", required=True, envvar="LAKEFEED_VERIFY_SOURCE",
              help="MySQL as mysql://user:password@host:3306 (the changefeed's --source form; "
                   "env LAKEFEED_VERIFY_SOURCE).")
@click.option("--table", "tables", multiple=True, help="Only this database.table (repeatable; default: every "
                                                        "MySQL table the config's tables rules keep).")
@click.option("--chunk-size", default=10_000, show_default=True, type=click.IntRange(min=1),
              help="Rows per key-range chunk compared by checksum.")
@click.option("--recheck-after", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="On a live system: wait this many seconds, then read differing chunks again and report only "
                   "the differences that remain.")
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--master", default=None, help="Spark master when not under spark-submit (default local[2]).")
def verify(config_file: Path, source_uri: str, tables: tuple[str, ...], chunk_size: int, recheck_after: float,
           output: str, master: str | None) -> None:
    """Compare every Delta table with its MySQL table, chunk by chunk; list the keys that differ.

    Exit codes: 0 every table equal, 1 a difference (the keys are listed), 2 bad config or input.
    """
    from rich.console import Console

    from spark_pipelines.verify import mysql_connector, source_tables, verify_table
    from spark_pipelines.verify_report import as_json, show

    errors = Console(stderr=True)
    try:
        config = load_config(config_file)
        connect = mysql_connector(source_uri)
        with connect() as conn, conn.cursor() as cur:
            names = source_tables(cur, config, tables)
    except PipelineError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:  # the server did not answer: say which, without a traceback
        click.echo(f"error: cannot read MySQL at --source: {str(exc).splitlines()[0]}", err=True)
        sys.exit(2)
    from spark_pipelines.session import get_or_build_session

    try:
        spark = get_or_build_session(dict(config.spark_conf), master=master,
                                     needs_warehouse=config.catalog_target is not None)
    except PipelineError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if config.catalog_target is not None:
        from spark_pipelines.io.catalog import resolve_locations

        config = resolve_locations(spark, config)

    def progress(table: str, chunks: int, rows: int) -> None:
        if chunks % 10 == 0:
            errors.print(f"{table}: {chunks} chunks, {rows} MySQL rows compared", highlight=False)

    results = []
    for number, (database, table) in enumerate(names, 1):
        errors.print(f"[{number}/{len(names)}] {database}.{table}", highlight=False)
        try:
            results.append(verify_table(spark, connect, config, database, table, chunk_size, progress,
                                        recheck_after))
        except PipelineError as exc:
            click.echo(f"error: {database}.{table}: {exc}", err=True)
            sys.exit(2)
    if output == "json":
        click.echo(as_json(results))
    else:
        show(Console(width=160), results)
    sys.exit(0 if all(r.equal for r in results) else 1)


if __name__ == "__main__":
    main()
