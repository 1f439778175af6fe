"""Sans-I/O Kafka framing: bytes in, request events out; response entities in, bytes out.

Rules (after the Kafka protocol guide):
- every frame is an int32 size followed by that many bytes; a size below the smallest header or above
  `max_request_bytes` (socket.request.max.bytes) poisons the stream: `frame_size` raises
  `FrameTooLarge`/`MalformedFrame` and the caller must close the connection (the server reads the
  frame itself, so it can account its bytes in queued.max.request.bytes before reading them);
- the request header is v2 (tagged fields, classic int16 client_id) when the API version is flexible,
  v1 otherwise; the response header is v1 when flexible, v0 otherwise, and always v0 for ApiVersions
  (kio records this per response class in `__header_schema__`);
- an unknown API key or version is reported as `UnsupportedRequest` so the caller can answer
  ApiVersions with UNSUPPORTED_VERSION or close the connection for anything else;
- a body that does not decode, or carries null where the schema forbids it, is `MalformedFrame` naming
  the API and the client (Kafka closes the connection then too); trailing bytes after it are ignored
  (as Kafka does).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from broker.protocol import legacy_produce
from broker.protocol.apis import SUPPORTED, is_supported, request_class
from broker.protocol.errors import FrameTooLarge, MalformedFrame
from broker.protocol.guard import check_body

_SIZE = struct.Struct(">i")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_MIN_HEADER = _KEY_VERSION_CORRELATION.size + 2  # key, version, correlation id, client_id length
_PRODUCE_KEY = 0
DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class RequestReceived:
    header: RequestHeader
    body: Any
    size: int


@dataclass(frozen=True, slots=True)
class UnsupportedRequest:
    """A well-framed request whose API key or version this broker does not serve."""

    header: RequestHeader
    size: int


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A response body encoded by hand (no kio class for it), framed with response header v0."""

    body: bytes


Event = RequestReceived | UnsupportedRequest

_read_header_v1 = entity_reader(RequestHeaderV1)
_read_header_v2 = entity_reader(RequestHeaderV2)


def frame_size(prefix: bytes, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> int:
    """The size announced by a frame's int32 prefix; raises FrameTooLarge/MalformedFrame when the stream
    cannot be trusted (Kafka's NetworkReceive: InvalidReceiveException above socket.request.max.bytes)."""
    size: int = _SIZE.unpack(prefix)[0]
    if size > max_request_bytes:
        raise FrameTooLarge(f"request of {size} bytes is over socket.request.max.bytes={max_request_bytes}")
    if size < _MIN_HEADER:
        raise MalformedFrame(f"request size {size} is smaller than a request header")
    return size


def decode_request(frame: bytes) -> Event:
    """Decode one frame (without its size prefix) into an event; raises MalformedFrame."""
    size = len(frame)
    key, version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(frame, 0)
    if not is_supported(key, version):
        client_id = _classic_client_id(frame)
        return UnsupportedRequest(RequestHeader(key, version, correlation_id, client_id), size)
    if key == _PRODUCE_KEY and version in legacy_produce.LEGACY_VERSIONS:
        return _decode_legacy_produce(frame, version, correlation_id)
    cls = request_class(key, version)
    try:
        reader = _read_header_v2 if cls.__header_schema__ is RequestHeaderV2 else _read_header_v1
        raw_header, offset = reader(frame, 0)
        check_body(cls, frame, offset)
        body, _used = entity_reader(cls)(frame, offset)
    # kio raises KeyError for unknown tagged fields (Kafka would skip them).
    except (MalformedFrame, SerialError, ValueError, TypeError, OverflowError, UnicodeDecodeError, IndexError,
            KeyError) as exc:
        raise MalformedFrame(_malformed(key, version, frame, exc)) from None
    # Trailing bytes are ignored, as Apache Kafka does: librdkafka 2.x sends Metadata v12 "all topics"
    # requests with three extra bytes.
    header = RequestHeader(key, version, correlation_id, raw_header.client_id)
    return RequestReceived(header, body, size)


def _malformed(key: int, version: int, frame: bytes, exc: Exception) -> str:
    """One line naming the API, the client and what is wrong (Kafka: "Error getting request for apiKey")."""
    detail = str(exc) if isinstance(exc, MalformedFrame) else f"cannot decode the request: {exc}"
    return f"malformed {SUPPORTED[key].name} v{version} request from client {_classic_client_id(frame)!r}: {detail}"


def _decode_legacy_produce(frame: bytes, version: int, correlation_id: int) -> RequestReceived:
    try:
        raw_header, offset = _read_header_v1(frame, 0)
    except (SerialError, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise MalformedFrame(f"cannot decode produce v{version} request header: {exc}") from exc
    body = legacy_produce.decode_request(frame, offset)
    return RequestReceived(RequestHeader(_PRODUCE_KEY, version, correlation_id, raw_header.client_id), body, len(frame))


def _classic_client_id(frame: memoryview | bytes) -> str | None:
    try:
        (length,) = struct.unpack_from(">h", frame, 8)
        if length < 0:
            return None
        return bytes(frame[10 : 10 + length]).decode("utf-8", "replace")
    except struct.error:
        return None


def encode_response(correlation_id: int, response: Any) -> bytes:
    """Frame a kio response entity: size, header (version from the response class), body."""
    if isinstance(response, RawResponse):
        return _SIZE.pack(4 + len(response.body)) + _SIZE.pack(correlation_id) + response.body
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    header_cls = type(response).__header_schema__
    entity_writer(header_cls)(buffer, header_cls(correlation_id=correlation_id))
    entity_writer(type(response))(buffer, response)
    data = buffer.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buffer.getvalue()


def encode_request(header: RequestHeader, request: Any) -> bytes:
    """Frame a kio request entity (used by tests and tools that speak to a broker)."""
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    header_cls = type(request).__header_schema__
    entity_writer(header_cls)(
        buffer,
        header_cls(
            request_api_key=header.api_key,
            request_api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
        ),
    )
    entity_writer(type(request))(buffer, request)
    data = buffer.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    del data
    return buffer.getvalue()
