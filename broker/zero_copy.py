"""Sending a connection's responses: encoded bytes with plain writes (the answers to requests read together
in one write, `ResponseSender`), file ranges with sendfile.

Apache Kafka sends Fetch data with `FileChannel.transferTo` (sendfile) on plaintext connections and
copies it through memory on TLS ones, where the kernel cannot encrypt; the same split here: a transport
that exposes an `ssl_object` (or where the platform has no sendfile) gets the range's bytes written.

The range goes by `os.sendfile` on the connection's socket, once the transport has nothing buffered (else
the file bytes would overtake bytes written before them). asyncio's `loop.sendfile` does the same on its
own loop, but uvloop (the broker's loop, broker/cli.py) does not implement it; this one path serves both.
While the socket is full the coroutine waits for it to take more through a duplicate of its descriptor:
both loops refuse a writer callback on a descriptor a transport owns, and the duplicate is the same socket.
Ranges under `MIN_SENDFILE_BYTES` are written instead: a system call and, when the socket is full, a
wait per range cost more than copying a few kilobytes into the transport's buffer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from broker.log_store import FileRange

MIN_SENDFILE_BYTES = 64 * 1024


class ResponseSender:
    """One connection's responses, in order. Answers made of bytes alone are held until the connection's
    task next waits (for the next request's bytes, or inside a handler), then go in one write: a client
    that pipelines requests (Kafka's producers keep up to five in flight) gets the answers to every request
    that was already read with one send instead of one each (in a profile under Kafka's perf producer at
    100 B, the small sends cost the broker about as much as the Produce handler itself). An answer with
    file ranges first flushes what is held, so order is kept; nothing is held past the task's next wait, so
    no answer waits behind a long-polling Fetch or an acks=all Produce."""

    def __init__(self, writer: asyncio.StreamWriter, zero_copy: bool) -> None:
        self._writer, self._zero_copy = writer, zero_copy
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._loop = asyncio.get_running_loop()

    async def send(self, parts: Sequence[Any]) -> None:
        if any(isinstance(part, FileRange) for part in parts):
            self.flush()
            await send_parts(self._writer, parts, self._zero_copy)
            return
        if not self._held:
            self._loop.call_soon(self.flush)  # runs once this task yields to the loop
        self._held.extend(parts)
        self._held_bytes += sum(map(len, parts))
        if self._held_bytes > _HELD_LIMIT:  # large answers go out now
            self.flush()
        # Waits only while the transport holds more than its high-water mark (a peer slow to read); else
        # it returns without yielding, so the next request already read is answered into the same write.
        await self._writer.drain()

    def flush(self) -> None:
        """Write what is held (also when the connection ends, before it closes)."""
        if not self._held:
            return
        held, self._held, self._held_bytes = self._held, [], 0
        if not self._writer.transport.is_closing():  # a peer that left: its answers have nowhere to go
            self._writer.writelines(held)


_HELD_LIMIT = 256 * 1024  # bytes held before send() writes them and waits for the peer to read


def supports_sendfile(writer: asyncio.StreamWriter) -> bool:
    """Whether this connection can take file bytes straight from the page cache (plain TCP)."""
    return (hasattr(os, "sendfile") and writer.get_extra_info("ssl_object") is None
            and writer.get_extra_info("socket") is not None)


async def send_parts(writer: asyncio.StreamWriter, parts: Sequence[Any], zero_copy: bool) -> None:
    """Write `parts` (bytes and `FileRange`s) in order; file ranges by sendfile when `zero_copy`."""
    for part in parts:
        if not isinstance(part, FileRange):
            writer.write(part)
            continue
        if not zero_copy or part.size < MIN_SENDFILE_BYTES or part.file is None:
            writer.write(part.read())
            continue
        await writer.drain()
        if writer.transport.get_write_buffer_size():  # still flushing earlier parts: keep the order
            writer.write(part.read())
            continue
        sent = await _sendfile(writer, part.file.fd, part.position, part.size)
        if sent < part.size:  # a frame shorter than its length prefix would desynchronize the client
            raise EOFError(f"segment {part.path} ended {part.size - sent} bytes short of the fetched range "
                           f"at {part.position}; closing the connection (Kafka's FileRecords.writeTo fails so)")
    await writer.drain()


async def _sendfile(writer: asyncio.StreamWriter, file_fd: int, position: int, size: int) -> int:
    """Send `size` bytes of `file_fd` from `position` on the writer's socket; the count sent (short only at
    the file's end). Connection errors propagate, as a failed transport write ends the connection."""
    socket_fd = writer.get_extra_info("socket").fileno()
    sent = 0
    watched = -1
    try:
        while sent < size:
            try:
                count = os.sendfile(socket_fd, file_fd, position + sent, size - sent)
            except BlockingIOError:
                if watched < 0:
                    watched = os.dup(socket_fd)
                await _writable(watched)
                continue
            if count == 0:
                break
            sent += count
    finally:
        if watched >= 0:
            os.close(watched)
    return sent


async def _writable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, wake)
    try:
        await ready
    finally:
        loop.remove_writer(fd)
