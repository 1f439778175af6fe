"""Responses whose record data is sent from files: a frame spliced from encoded bytes and file ranges.

Apache Kafka sends Fetch data with zero copy (`FileRecords.writeTo` -> `FileChannel.transferTo`, i.e.
sendfile): the response's own fields are serialized, the record bytes go from the page cache to the
socket. Here the handler encodes the response with a unique 16-byte token in each `records` field that
comes from files; `splice` finds each token, rewrites its length prefix for the real size and cuts the
frame there, giving a list of encoded bytes and the handler's chunks (file ranges) in order. Sans-I/O:
what sends the parts (sendfile, or plain writes on transports that cannot) is the server's business.

Length prefixes: `NULLABLE_BYTES` is an int32 (non-flexible versions), `COMPACT_NULLABLE_BYTES` an
unsigned varint of length + 1 (flexible versions); kio picks the one the response version uses.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TOKEN_SIZE = 16
_INT32 = struct.Struct(">i")
_PLAIN_PREFIX = _INT32.pack(TOKEN_SIZE)
_COMPACT_PREFIX = bytes([TOKEN_SIZE + 1])


@dataclass(frozen=True, slots=True)
class Insert:
    token: bytes  # what the response's records field holds in the encoded frame
    size: int  # bytes the chunks add up to
    chunks: tuple[Any, ...]  # bytes or file ranges, sent in order in place of the token


@dataclass(frozen=True, slots=True)
class SplicedResponse:
    """A kio response plus the record data that replaces its tokens when it is sent."""

    response: Any
    inserts: tuple[Insert, ...]


def new_token() -> bytes:
    return os.urandom(TOKEN_SIZE)  # 128 random bits: never found by chance in the rest of the frame


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def splice(frame: bytes, inserts: Sequence[Insert]) -> list[Any]:
    """The frame (4-byte size first) with every insert's token replaced by its chunks; the size is fixed."""
    parts: list[Any] = []
    cursor, total = 4, len(frame) - 4
    for insert in inserts:
        at = frame.index(insert.token, cursor)
        if frame[at - 4 : at] == _PLAIN_PREFIX:
            start, prefix = at - 4, _INT32.pack(insert.size)
        elif frame[at - 1 : at] == _COMPACT_PREFIX:
            start, prefix = at - 1, _uvarint(insert.size + 1)
        else:
            raise ValueError("a records token without a bytes length prefix before it")
        parts.append(frame[cursor:start] + prefix)
        parts.extend(insert.chunks)
        total += len(prefix) + insert.size - (at + TOKEN_SIZE - start)
        cursor = at + TOKEN_SIZE
    parts.append(frame[cursor:])
    parts[0] = _INT32.pack(total) + parts[0]
    return [part for part in parts if not isinstance(part, bytes) or part]
