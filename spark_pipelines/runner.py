"""`spark-pipeline run` once the config is valid: start the session and the query, print one line per
micro-batch (and a live status line with `--progress`), feed the metrics, and turn a failure into its
root cause on one line (the trace with `--verbose`). Returns the command's exit code."""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

import click

from spark_pipelines.config import PipelineConfig
from spark_pipelines.errors import ConfigError, PipelineError
from spark_pipelines.failure import root_cause

log = logging.getLogger("spark_pipelines.batches")
POLL_S = 0.5


def run_pipeline(config: PipelineConfig, *, once: bool, master: str | None, live: bool = False,
                 metrics_port: int | None = None, metrics_host: str = "127.0.0.1", verbose: bool = False) -> int:
    from spark_pipelines.metrics import PipelineMetrics

    metrics = None
    if metrics_port is not None:
        metrics = PipelineMetrics()
        try:
            metrics.serve(metrics_port, metrics_host)
        except OSError as exc:
            click.echo(f"error: --metrics-port {metrics_port}: cannot listen on {metrics_host} ({exc.strerror}); "
                       "choose a free port", err=True)
            return 2
    from spark_pipelines.session import get_or_build_session

    try:
        spark = get_or_build_session(dict(config.spark_conf), master=master,
                                     needs_warehouse=config.catalog_target is not None)
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        return 2
    except PipelineError as exc:
        click.echo(f"error: cannot start Spark: {exc}", err=True)
        return 1
    return _follow(spark, config, once, live, metrics, verbose)


def _follow(spark: Any, config: PipelineConfig, once: bool, live: bool, metrics: Any, verbose: bool) -> int:
    from spark_pipelines.io.kafka import read_stream
    from spark_pipelines.jobs.apply import ApplyBatch, BatchReport, start_query
    from spark_pipelines.progress import StatusLine, batch_line

    reports: dict[int, BatchReport] = {}
    batch = ApplyBatch(config, on_batch=lambda report: reports.__setitem__(report.batch_id, report))
    status = StatusLine() if live else None
    started = time.monotonic()
    printed = -1
    last = None

    def report_new() -> None:
        nonlocal printed, last
        for progress in query.recentProgress:
            batch_id = progress["batchId"]
            if batch_id <= printed or batch_id not in reports:
                continue  # idle progress, or a batch whose function has not finished yet
            last = batch_line(progress, reports.pop(batch_id))
            printed = batch_id
            if status is not None:
                status.clear()
            log.info("%s", last.text(), extra=last.fields())
            if metrics is not None:
                metrics.record(last)
        if status is not None:
            elapsed = time.strftime("%H:%M:%S", time.gmtime(time.monotonic() - started))
            fresh = None if last is None else last.freshness_s()
            status.show(f"running {elapsed} | last batch {printed if printed >= 0 else '-'} | freshness "
                        f"{'-' if fresh is None else f'{fresh:.0f} s'} | "
                        f"{'waiting for the first batch' if last is None else last.text()}")

    query = start_query(spark, read_stream(spark, config.source), config, once=once, batch=batch)
    try:
        while not query.awaitTermination(POLL_S):
            report_new()
        report_new()
        if batch.merger is not None:  # merge-on-read: raises a failed merge, else merges what is left
            batch.merger.finish()
    except KeyboardInterrupt:
        query.stop()
        if batch.merger is not None:
            batch.merger.stop()
    except Exception as exc:
        if query.isActive:
            query.stop()
        if batch.merger is not None:
            batch.merger.stop()
        report_new()
        if status is not None:
            status.clear()
        if verbose:
            if batch.failure is not None:
                traceback.print_exception(batch.failure)
            click.echo(str(exc), err=True)
        cause = root_cause(exc, batch.failure, topics=config.source.described())
        click.echo(f"error: the pipeline stopped: {cause}", err=True)
        return 1
    finally:
        if status is not None:
            status.clear()
    return 0
