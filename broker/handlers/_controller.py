"""Kafka error codes for what the active controller answered a forwarded admin request."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kio.schema.errors import ErrorCode

from broker.cluster.controller_client import ControllerRejected, ControllerUnavailable
from broker.protocol.errors import KafkaApiError


@contextlib.contextmanager
def controller_errors() -> Iterator[None]:
    """A refusal keeps the controller's Kafka error (INVALID_REQUEST if unnamed); no controller in time is
    REQUEST_TIMED_OUT, which clients retry."""
    try:
        yield
    except ControllerRejected as exc:
        name = exc.kafka_error.lower()
        code = ErrorCode[name] if name in ErrorCode.__members__ else ErrorCode.invalid_request
        raise KafkaApiError(code, str(exc)) from None
    except ControllerUnavailable as exc:
        raise KafkaApiError(ErrorCode.request_timed_out, str(exc)) from None
