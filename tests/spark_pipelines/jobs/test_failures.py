"""A batch that fails inside a Spark job is reported to the stream thread in a form Spark's own stop
check (StreamExecution.isInterruptionException, run on the JVM here) can read: before, the Java stack
trace in the Python traceback made that check overflow the stack (java.util.regex recursion)."""

import logging
import traceback
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError

from spark_pipelines.errors import BatchInterrupted, SparkJobError
from spark_pipelines.jobs.failures import short_failure


def _failed_job(spark: Any, tmp_path: Path) -> Py4JJavaError:
    """A real failed Spark job whose SparkException PySpark leaves unconverted: the long Py4JJavaError
    (its Java stack trace is about 9,000 characters) a batch function raises when a job fails."""
    (tmp_path / "part-0.parquet").write_bytes(b"not a parquet file" * 10)
    with pytest.raises(Py4JJavaError) as info:
        spark.read.schema("a INT").parquet(str(tmp_path)).collect()
    return info.value


def _interrupted(spark: Any) -> Py4JJavaError:
    jvm = spark._jvm
    jvm.java.lang.Thread.currentThread().interrupt()
    with pytest.raises(Py4JJavaError) as info:
        jvm.java.lang.Thread.sleep(1000)  # throws at once: the (pinned) JVM thread is interrupted
    return info.value


def _what_py4j_sends(error: BaseException) -> str:
    """The message of the Py4JException the stream thread receives: py4j's callback server sends
    traceback.format_exc() of what the foreachBatch function raised (pyspark re-raises it)."""
    try:
        raise error
    except BaseException:
        return traceback.format_exc()


def _stop_check(spark: Any, message: str) -> bool:
    jvm = spark._jvm
    exception = jvm.py4j.Py4JException(message)
    return bool(jvm.org.apache.spark.sql.execution.streaming.runtime.StreamExecution.isInterruptionException(
        exception, spark._jsc.sc()))


def _records_of_failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "spark_pipelines.jobs.failures"]


def test_a_failed_job_is_a_short_error_and_no_stack_overflow(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failed = _failed_job(spark, tmp_path)
    # The cause of the StackOverflowError: the unshortened traceback (what the batch raised before).
    with pytest.raises(Py4JJavaError, match="StackOverflowError"):
        _stop_check(spark, _what_py4j_sends(failed))
    with caplog.at_level(logging.INFO, logger="spark_pipelines.jobs.failures"):
        error = short_failure(failed, 7, job_group=None)
    ours = _records_of_failures(caplog)
    assert [r.levelno for r in ours] == [logging.ERROR] and "\tat " in ours[0].getMessage()
    assert isinstance(error, SparkJobError) and error.retriable
    assert "batch 7" in str(error) and "FAILED_READ_FILE" in str(error) and "\tat " not in str(error)
    assert _stop_check(spark, _what_py4j_sends(error)) is False


def test_an_interrupted_batch_is_read_as_a_stop(spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="spark_pipelines.jobs.failures"):
        error = short_failure(_interrupted(spark), 3, job_group=None)
    # A query's stop is expected: one info line, no error and no Java stack trace in the log.
    ours = _records_of_failures(caplog)
    assert [r.levelno for r in ours] == [logging.INFO]
    assert "interrupted by the query's stop" in ours[0].getMessage() and "\tat " not in ours[0].getMessage()
    assert isinstance(error, BatchInterrupted)
    assert _stop_check(spark, _what_py4j_sends(error)) is True


def test_a_job_cancelled_with_the_querys_group_is_a_stop() -> None:
    class Cancelled(Exception):
        def __str__(self) -> str:
            return ("An error occurred while calling o77.collect.\n: org.apache.spark.SparkException: Job 12 "
                    "cancelled part of cancelled job group 5f0c-run\n\tat org.apache.spark.scheduler.X(X.scala:1)")

    assert isinstance(short_failure(Cancelled(), 1, job_group="5f0c-run"), BatchInterrupted)
    assert isinstance(short_failure(Cancelled(), 1, job_group="other-run"), SparkJobError)
