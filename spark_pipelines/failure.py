"""A failed streaming query's root cause, on one line.

An exception raised in the foreachBatch function travels Python -> Py4J -> the JVM's query thread ->
Py4J -> `StreamingQueryException`, whose text is "An exception was raised by the Python Proxy. Return
Message: Traceback ..." with the useful line at the end of the Python traceback. The batch function
keeps the original exception (ApplyBatch.failure), which wins; otherwise the text is unwrapped here.
"""

from __future__ import annotations

import re

_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.+)$")
_STREAM_FAILED = re.compile(r"^\s*(?:\[STREAM_FAILED\]\s*)?Query \[[^\]]*\] terminated with exception: ")


def root_cause(error: BaseException, recorded: BaseException | None = None) -> str:
    if recorded is not None:
        return _one_line(f"{type(recorded).__name__}: {recorded}")
    text = str(error)
    if "Python Proxy" in text or "Traceback (most recent call last)" in text:
        found = [m for line in text.splitlines() if (m := _PYTHON_ERROR.match(line.strip()))]
        if found:
            name, message = found[-1].groups()
            return _one_line(f"{name.rsplit('.', 1)[-1]}: {message}")
    return _one_line(_STREAM_FAILED.sub("", text)) or type(error).__name__


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""
