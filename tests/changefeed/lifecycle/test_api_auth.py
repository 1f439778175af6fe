"""The changefeed server's API with --auth-token: no token or a wrong one -> 401 (RFC 6750), the health check
stays open, and the CLI sends the token from LAKEFEED_API_TOKEN or --auth-token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from changefeed.lifecycle.client import call
from tests.changefeed.lifecycle.conftest import Process, StartServer


def _cli(server: Process, *args: str, env_token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LAKEFEED_API_TOKEN"}
    if env_token is not None:
        env["LAKEFEED_API_TOKEN"] = env_token
    return subprocess.run([sys.executable, "-m", "changefeed.cli", *args, "--server", server.url],
                          capture_output=True, text=True, timeout=60, env=env)


def test_api_needs_the_bearer_token(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server("s1", None, "--auth-token", "t0ps3cret")
    assert call(server.url, "GET", "/api/v2/health")[0] == 200
    status, body = call(server.url, "GET", "/api/v2/changefeeds")
    assert (status, body["error"]) == (401, "unauthorized") and "missing Authorization" in body["message"]
    assert call(server.url, "GET", "/metrics", token="wrong")[0] == 401
    assert call(server.url, "GET", "/api/v2/changefeeds", token="t0ps3cret") == (200, [])
    refused = _cli(server, "list")
    assert refused.returncode == 1 and "missing Authorization: Bearer" in refused.stderr
    assert _cli(server, "list", env_token="t0ps3cret").returncode == 0
    flagged = subprocess.run([sys.executable, "-m", "changefeed.cli", "--auth-token", "t0ps3cret", "list",
                              "--server", server.url], capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items() if k != "LAKEFEED_API_TOKEN"})
    assert flagged.returncode == 0, flagged.stderr
    assert "t0ps3cret" not in server.log()
