"""How a failed micro-batch is reported to Spark's stream thread, so that stopping a live query stops it.

Spark calls the foreachBatch function through Py4J. An exception there reaches the stream thread as a
`py4j.Py4JException` whose message is the Python traceback (py4j's callback server sends
`traceback.format_exc()`), and Spark decides whether the query was merely stopped
(`StreamExecution.isInterruptionException`) by searching that message with the regex
`py4j.protocol.Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)(java.lang.InterruptedException|
java.io.InterruptedIOException|java.nio.channels.ClosedByInterruptException)`. In java.util.regex a repeated
alternation recurses once per character, and the traceback of a Py4JJavaError ends with the whole Java
stack trace (thousands of characters after "calling"): the search overflows the thread's stack. That is
the 1,000-line `java.lang.StackOverflowError` from `java.util.regex` printed when `query.stop()`
interrupts a batch, and Spark then sees neither a clean stop nor the real error.

So the batch function re-raises a Java failure as a short PipelineError: the Java error's first line
only (the full trace is logged first, as an error). An interruption by the query's stop (the thread
interrupted, or the batch's Spark job cancelled with the query's job group, as Spark itself recognises
it) is spelled the way Spark's check expects, so the query ends as stopped, and logged as one info line.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from spark_pipelines.errors import BatchInterrupted, SparkJobError

log = logging.getLogger(__name__)
INTERRUPTIONS = ("java.lang.InterruptedException", "java.io.InterruptedIOException",
                 "java.nio.channels.ClosedByInterruptException")
_PROXY_PREFIX = "py4j.protocol.Py4JJavaError: An error occurred while calling"  # what Spark's check looks for
_CALL = re.compile(r"An error occurred while calling (\S+?)\.?\n")
_EXCEPTION_LINE = re.compile(r"^(?:Caused by: |: )?([\w$.]+(?:Exception|Error)\b.*)$", re.MULTILINE)
FIRST_LINE_CHARS = 500


def is_java_failure(error: BaseException) -> bool:
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    return isinstance(error, Py4JJavaError)


def short_failure(error: BaseException, batch_id: int, job_group: str | None) -> Exception:
    """The error to raise instead of `error` (a Py4JJavaError): short, and an interruption when the
    query's stop caused it."""
    text = str(error)
    call = _CALL.search(text)
    lines = [match.group(1) for match in _EXCEPTION_LINE.finditer(text)]
    first = (lines[0] if lines else text.strip().splitlines()[0] if text.strip() else "")[:FIRST_LINE_CHARS]
    if interrupted(lines, job_group):
        # The query's own stop: expected, so one line (the trace only at debug), not an error.
        log.info("batch %d: interrupted by the query's stop (%s)", batch_id, first[:200])
        log.debug("batch %d: the interrupted Spark job:\n%s", batch_id, text)
        return BatchInterrupted(
            f"{_PROXY_PREFIX} {call.group(1) if call else 'the batch'}: {INTERRUPTIONS[0]}: batch {batch_id} "
            f"stopped with the query ({first[:200]})")
    log.error("batch %d: a Spark job failed:\n%s", batch_id, text)
    return SparkJobError(f"batch {batch_id}: a Spark job failed: {first}; the driver log has the full Java stack "
                         "trace. The query can be restarted from its checkpoint: a re-run batch skips the tables "
                         "it already merged")


def interrupted(exception_lines: list[str], job_group: str | None) -> bool:
    """An interrupted thread anywhere in the cause chain, or a job cancelled with the stream's job group
    (the query's run id: what `query.stop()` cancels)."""
    for line in exception_lines:
        if line.startswith(INTERRUPTIONS):
            return True
        if job_group and "cancelled" in line and job_group in line:
            return True
    return False


def job_group_of(spark: Any) -> str | None:
    """The calling thread's Spark job group: the stream's run id inside foreachBatch."""
    try:
        group = spark.sparkContext.getLocalProperty("spark.jobGroup.id")
    except Exception:  # the JVM is going away with the query: the failure's text alone decides
        return None
    return str(group) if group else None
