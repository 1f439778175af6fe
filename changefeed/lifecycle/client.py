"""A tiny HTTP JSON client for the changefeed server (standard library only: the CLI stays light)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any


class ServerUnreachable(Exception):
    """No HTTP answer from the server (down, wrong URL, timeout)."""


def tls_context(ca: str | None, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
    """How the CLI checks an https:// server: `ca` (PEM) instead of the system's trust store, and a client
    certificate (`cert`, `key`) for a server that asks for one (`changefeed server --tls-client-ca`)."""
    context = ssl.create_default_context(cafile=ca)
    if cert:
        context.load_cert_chain(cert, key)
    return context


def call(server: str, method: str, path: str, body: dict[str, Any] | None = None,
         timeout: float = 60.0, token: str | None = None, tls: ssl.SSLContext | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(server.rstrip("/") + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=tls) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, {"error": "http", "message": raw.decode(errors="replace")[:500]}
    except (urllib.error.URLError, OSError) as exc:
        raise ServerUnreachable(f"cannot reach the changefeed server at {server}: {exc}") from exc
