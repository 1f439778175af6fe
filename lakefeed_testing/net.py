"""Loopback helpers: free ports and waiting for a listener."""

import random
import socket
import time
from collections.abc import Callable
from pathlib import Path

from lakefeed_testing.errors import ServiceError

_LOWEST = 10_000
# Fixed ports of tools the tests start, never handed out: Spark Connect's local server (`spark-pipelines`)
# binds 15002, the only port its client tries.
_RESERVED = frozenset({15002})


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux default 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses right now, below the kernel's ephemeral range.

    Services are often stopped and started again on the same port (a killed broker node, a restarted
    server); a port from the ephemeral range can meanwhile become the source port of some client's
    connection, and the restart then fails with EADDRINUSE. Ports below that range are never handed out
    to outgoing connections."""
    return free_port_block(1)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(
    check: Callable[[], bool], *, timeout: float, what: str, alive: Callable[[], bool] = lambda: True
) -> None:
    """Poll `check` until it is true; fail with `what` in the message after `timeout` seconds
    or as soon as `alive` says the process behind it has died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not alive():
            raise ServiceError(f"{what}: the process exited before it was ready")
        time.sleep(0.1)
    raise ServiceError(f"{what}: not ready after {timeout:.0f} s", retriable=True)


def free_port_block(count: int) -> int:
    """The first of `count` consecutive free ports on 127.0.0.1 (dev-cluster's port layout needs a block),
    below the kernel's ephemeral range (see free_port)."""
    high = _ephemeral_low() - count
    for _ in range(200):
        base = random.randrange(_LOWEST, max(high, _LOWEST + 1))
        ports = range(base, base + count)
        if _RESERVED.isdisjoint(ports) and all(_bindable(port) for port in ports):
            return base
    raise ServiceError(f"no {count} consecutive free ports on 127.0.0.1 below {high + count}", retriable=True)
