"""The changefeed server's API with --auth-token: no token or a wrong one -> 401 (RFC 6750), the health check
stays open, and the CLI sends the token from LAKEFEED_API_TOKEN or --auth-token. Over HTTPS with client
certificates: --tls-cert/--tls-key/--tls-client-ca on the server, --ca/--cert/--key on the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from changefeed.lifecycle.client import ServerUnreachable, call, tls_context
from lakefeed_testing.tls import TestCA
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


def test_api_over_tls_with_client_certificates(start_server: StartServer, tmp_path: Path) -> None:
    """--tls-cert/--tls-key serve the API over HTTPS; --tls-client-ca admits only clients with a certificate the
    CA signed (mutual TLS). The CLI checks the server with --ca and presents --cert/--key."""
    ca = TestCA(tmp_path / "pki")
    server_pem, client_pem = ca.issue("changefeed-server", server=True), ca.issue("operator", server=False)
    server = start_server("s1", None, "--tls-cert", str(server_pem.certificate), "--tls-key", str(server_pem.key),
                          "--tls-client-ca", str(ca.ca_file))
    url = f"https://127.0.0.1:{server.port}"
    mutual = tls_context(str(ca.ca_file), str(client_pem.certificate), str(client_pem.key))
    assert call(url, "GET", "/api/v2/changefeeds", tls=mutual) == (200, [])
    with pytest.raises(ServerUnreachable):  # no client certificate: the handshake (or TLS 1.3's first read) fails
        call(url, "GET", "/api/v2/changefeeds", tls=tls_context(str(ca.ca_file)))
    with pytest.raises(ServerUnreachable, match="CERTIFICATE_VERIFY_FAILED"):  # a server the system does not trust
        call(url, "GET", "/api/v2/changefeeds", tls=tls_context(None, str(client_pem.certificate),
                                                                str(client_pem.key)))
    env = {k: v for k, v in os.environ.items() if k != "LAKEFEED_API_TOKEN"}
    tls_args = ["--ca", str(ca.ca_file), "--cert", str(client_pem.certificate), "--key", str(client_pem.key)]
    listed = subprocess.run([sys.executable, "-m", "changefeed.cli", *tls_args, "list", "--server", url],
                            capture_output=True, text=True, timeout=60, env=env)
    assert listed.returncode == 0, listed.stderr
    no_cert = subprocess.run([sys.executable, "-m", "changefeed.cli", "--ca", str(ca.ca_file), "list", "--server",
                              url], capture_output=True, text=True, timeout=60, env=env)
    assert no_cert.returncode == 5 and "cannot reach the changefeed server" in no_cert.stderr
    alone = subprocess.run([sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(tmp_path / "x"),
                            "--tls-key", str(server_pem.key)], capture_output=True, text=True, timeout=60, env=env)
    assert alone.returncode == 2 and "--tls-key and --tls-client-ca need --tls-cert" in alone.stderr
    wrong = subprocess.run([sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(tmp_path / "x"),
                            "--tls-cert", str(server_pem.certificate), "--tls-key", str(client_pem.key)],
                           capture_output=True, text=True, timeout=60, env=env)
    assert wrong.returncode == 2 and "cannot load them" in wrong.stderr, wrong.stderr
