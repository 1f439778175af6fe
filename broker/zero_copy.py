"""Sending a spliced response: encoded bytes with plain writes, file ranges with sendfile.

Apache Kafka sends Fetch data with `FileChannel.transferTo` (sendfile) on plaintext connections and
copies it through memory on TLS ones, where the kernel cannot encrypt; the same split here: a transport
that exposes an `ssl_object` (or where the platform has no sendfile) gets the range's bytes written.
Ranges under `MIN_SENDFILE_BYTES` are written too: each `loop.sendfile` call waits for the transport's
buffer to drain and pauses reading, which costs more than copying a few kilobytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from broker.log_store import FileRange

MIN_SENDFILE_BYTES = 64 * 1024


class _Descriptor:
    """The file object `loop.sendfile` wants, over a descriptor the range holds open (not ours to close)."""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def seek(self, offset: int, whence: int = 0) -> int:
        return offset  # asyncio records the position it reached; ranges carry their own offsets


def supports_sendfile(writer: asyncio.StreamWriter) -> bool:
    """Whether this connection can take file bytes straight from the page cache (plain TCP)."""
    return writer.get_extra_info("ssl_object") is None and writer.get_extra_info("socket") is not None


async def send_parts(writer: asyncio.StreamWriter, parts: Sequence[Any], zero_copy: bool) -> None:
    """Write `parts` (bytes and `FileRange`s) in order; file ranges by sendfile when `zero_copy`."""
    loop = asyncio.get_running_loop()
    for part in parts:
        if not isinstance(part, FileRange):
            writer.write(part)
            continue
        if not zero_copy or part.size < MIN_SENDFILE_BYTES or part.file is None:
            writer.write(part.read())
            continue
        await writer.drain()
        try:
            await loop.sendfile(writer.transport, _Descriptor(part.file.fd),  # type: ignore[arg-type]
                                part.position, part.size,
                                fallback=False)
        except (asyncio.SendfileNotAvailableError, RuntimeError):
            writer.write(part.read())  # nothing was sent by it: the native path failed before sending
    await writer.drain()
