"""Loopback helpers: free ports and waiting for a listener."""

import socket
import time
from collections.abc import Callable

from lakefeed_testing.errors import ServiceError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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
    """The first of `count` consecutive free ports on 127.0.0.1 (dev-cluster's port layout needs a block)."""
    for _ in range(50):
        base = free_port()
        if base + count >= 65535:
            continue
        try:
            for port in range(base, base + count):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise ServiceError(f"no {count} consecutive free ports on 127.0.0.1", retriable=True)
