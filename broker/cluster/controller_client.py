"""Talk to the active controller: JSON lines over the quorum port (over TLS when the controller listener is SSL),
following NOT_CONTROLLER hints."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from typing import Any

log = logging.getLogger("broker.cluster")


class ControllerUnavailable(Exception):
    """No quorum member answered as the active controller in time."""

    retriable = True


class ControllerRejected(Exception):
    """The active controller refused the request; `kafka_error` names the Kafka error code."""

    retriable = False

    def __init__(self, kafka_error: str, message: str) -> None:
        super().__init__(message)
        self.kafka_error = kafka_error


class ControllerClient:
    def __init__(self, voters: dict[int, tuple[str, int]], timeout_s: float = 2.0,
                 tls: ssl.SSLContext | None = None) -> None:
        self.voters = voters
        self.tls = tls  # set when the controller listener is SSL (controller.listener.names)
        self.timeout_s = timeout_s
        self._leader: int | None = None
        self._conns: dict[int, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        self._lock = asyncio.Lock()

    async def _ask(self, node: int, request: dict[str, Any]) -> dict[str, Any]:
        conn = self._conns.get(node)
        if conn is None or conn[1].is_closing():
            host, port = self.voters[node]
            conn = await asyncio.wait_for(asyncio.open_connection(
                host, port, limit=64 << 20, ssl=self.tls, server_hostname=host if self.tls else None), self.timeout_s)
            self._conns[node] = conn
        reader, writer = conn
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            line = await asyncio.wait_for(reader.readline(), self.timeout_s)
            if not line:
                raise ConnectionError(f"controller {node} closed the connection")
            answer: dict[str, Any] = json.loads(line)
            return answer
        except BaseException:
            self._drop(node)
            raise

    def _drop(self, node: int) -> None:
        conn = self._conns.pop(node, None)
        if conn is not None:
            conn[1].close()

    async def ask_node(self, node: int, request: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            return await self._ask(node, request)

    async def call(self, op: str, deadline_s: float = 10.0, **fields: Any) -> dict[str, Any]:
        """Send `op` to the active controller; retries other voters until `deadline_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_s
        request = {"op": op, **fields}
        last = "no voter answered"
        while loop.time() < deadline:
            order = ([self._leader] if self._leader in self.voters else []) + sorted(self.voters)
            for node in order:
                assert node is not None
                try:
                    async with self._lock:
                        answer = await self._ask(node, request)
                except (OSError, TimeoutError, ConnectionError, ValueError) as exc:
                    last = f"controller {node}: {exc or type(exc).__name__}"
                    continue
                if answer.get("ok"):
                    self._leader = node
                    return answer
                if answer.get("error") == "NOT_CONTROLLER":
                    hint = answer.get("leader")
                    last = f"controller {node} is not active (leader hint {hint})"
                    if isinstance(hint, int) and hint in self.voters and hint != node:
                        self._leader = hint
                    continue
                raise ControllerRejected(str(answer.get("error")), str(answer.get("message") or answer))
            await asyncio.sleep(0.1)
        raise ControllerUnavailable(f"{op}: no active controller within {deadline_s:.0f} s ({last})")

    def close(self) -> None:
        for node in list(self._conns):
            with contextlib.suppress(Exception):
                self._drop(node)
