"""Errors of the Kafka protocol layer, each with a `retriable` flag.

Exception tree::

    ProtocolError                    base; `retriable` says whether trying again may succeed
    ├── FrameError                   the byte stream cannot be trusted: the connection is closed
    │   ├── FrameTooLarge            size prefix over socket.request.max.bytes (or negative)
    │   └── MalformedFrame           truncated or undecodable header/body, trailing bytes
    └── KafkaApiError                a request-level failure answered with a Kafka error code
        └── one subclass per code    built from kio's ErrorCode table, see `error_class`

Handlers raise `KafkaApiError(ErrorCode.x, "what is wrong")`; `error_class(code)` maps a wire code to
its class so client-side code (tests, tools) can `except` a specific Kafka error.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class ProtocolError(Exception):
    retriable: bool = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class FrameError(ProtocolError):
    """The connection's byte stream is unusable; the server closes the connection."""


class FrameTooLarge(FrameError):
    pass


class MalformedFrame(FrameError):
    pass


class KafkaApiError(ProtocolError):
    code: ErrorCode = ErrorCode.unknown_server_error

    def __init__(self, code: ErrorCode | None = None, message: str = "") -> None:
        if code is not None:
            self.code = code
        super().__init__(message or self.code.name, retriable=self.code.retriable)


def _class_name(code: ErrorCode) -> str:
    return "".join(part.title() for part in code.name.split("_")) + "Error"


_ERROR_CLASSES: dict[int, type[KafkaApiError]] = {
    int(code): type(_class_name(code), (KafkaApiError,), {"code": code, "retriable": code.retriable})
    for code in ErrorCode
}


def error_class(code: int) -> type[KafkaApiError]:
    """The exception class for a wire error code (unknown codes map to UNKNOWN_SERVER_ERROR)."""
    return _ERROR_CLASSES.get(code, _ERROR_CLASSES[int(ErrorCode.unknown_server_error)])


def raise_for_code(code: int, message: str = "") -> None:
    if code != 0:
        raise error_class(code)(None, message)


def named_error(name: str, message: str, default: ErrorCode = ErrorCode.unknown_server_error) -> KafkaApiError:
    """The error for a Kafka error name as other layers carry it ("NOT_LEADER_OR_FOLLOWER"); the one mapping
    from names to codes: a name kio does not know becomes `default`."""
    key = name.lower()
    return KafkaApiError(ErrorCode[key] if key in ErrorCode.__members__ else default, message)
