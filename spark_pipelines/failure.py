"""A failed streaming query's root cause, on one line, with how to fix it when we know.

An exception raised in the foreachBatch function travels Python -> Py4J -> the JVM's query thread ->
Py4J -> `StreamingQueryException`, whose text is "An exception was raised by the Python Proxy. Return
Message: Traceback ..." with the useful line at the end of the Python traceback. The batch function
keeps the original exception (ApplyBatch.failure), which wins; otherwise the text is unwrapped here.

A Kafka client error of the source (a failed SASL login, a denied topic) arrives as the query's own
exception: "[STREAM_FAILED] Query [...] terminated with exception: <Kafka exception>: <message> SQLSTATE:
XXKST". The wrapper and its SQLSTATE (STREAM_FAILED's, not the cause's) are dropped, and the security
errors get the fix from docs/runbooks/secure-deployment.md appended. The fix for a denied topic names the
configured topics: Apache Kafka's answer ("Topic authorization failed.") does not.
"""

from __future__ import annotations

import re

_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.+)$")
_STREAM_FAILED = re.compile(r"^\s*(?:\[STREAM_FAILED\]\s*)?Query \[[^\]]*\] terminated with exception: ")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+$")
# Kafka client exceptions (org.apache.kafka.common.errors) a secured source meets, and their fix.
_KAFKA_FIXES = {
    "SaslAuthenticationException": "check the user and password of source.options kafka.sasl.jaas.config and "
                                   "kafka.sasl.mechanism against the broker's SCRAM users",
    "SslAuthenticationException": "check that source.options kafka.ssl.truststore.location holds the CA that "
                                  "signed the broker's certificate and that the certificate names the host",
    "TopicAuthorizationException": "grant the pipeline's user READ on {topics} "
                                   "(docs/runbooks/secure-deployment.md)",
    "GroupAuthorizationException": "grant the pipeline's user READ on the consumer groups it uses "
                                   "(prefix spark-kafka-source-, or source.options groupIdPrefix)",
}
_KAFKA_ERROR = re.compile(r"\borg\.apache\.kafka\.common\.errors\.(\w+Exception)\b")


def root_cause(error: BaseException, recorded: BaseException | None = None, *, topics: str = "its topics") -> str:
    """`topics`: what the source reads, for the fix of a denied topic ("topic shop", "topics matching shop-.*")."""
    if recorded is not None:
        return _one_line(f"{type(recorded).__name__}: {recorded}")
    text = str(error)
    if "Python Proxy" in text or "Traceback (most recent call last)" in text:
        found = [m for line in text.splitlines() if (m := _PYTHON_ERROR.match(line.strip()))]
        if found:
            name, message = found[-1].groups()
            return _one_line(f"{name.rsplit('.', 1)[-1]}: {message}")
    line = _one_line(_STREAM_FAILED.sub("", text))
    if not line:
        return type(error).__name__
    if _STREAM_FAILED.match(text):
        line = _SQLSTATE.sub("", line)
    kafka = _KAFKA_ERROR.search(line)
    if kafka and kafka.group(1) in _KAFKA_FIXES:
        line = f"{line}; {_KAFKA_FIXES[kafka.group(1)].format(topics=topics)}"
    return line


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""
