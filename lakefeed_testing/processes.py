"""Stopping a service process a test or benchmark started."""

from __future__ import annotations

import subprocess


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM (a clean shutdown), then SIGKILL if it is still running after `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
