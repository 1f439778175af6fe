"""A real BrokerServer in the test's own process, on either event loop the broker runs on, for tests that
also need to see inside it (patched system calls, counted writes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import uvloop

from broker.config import BrokerConfig
from broker.server import BrokerServer
from broker.storage.store import DiskLogStore
from lakefeed_testing.net import free_port

RUNNERS: dict[str, Callable[[Coroutine[Any, Any, Any]], Any]] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


def serve_in_process(tmp_path: Path, loop_name: str, client: Callable[[int], Any]) -> Any:
    """Run `client(port)` in a thread against a one-partition-default BrokerServer on `loop_name`; its result."""
    async def main() -> Any:
        port = free_port()
        config = BrokerConfig().with_overrides({"log.dirs": str(tmp_path), "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                                                "num.partitions": "1"})
        server = BrokerServer(config, DiskLogStore(config.data_dir))
        await server.start()
        try:
            return await asyncio.to_thread(client, port)
        finally:
            await server.close()

    return RUNNERS[loop_name](main())
