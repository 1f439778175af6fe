"""Bearer-token authentication of the changefeed server's HTTP API (RFC 6750).

With a token configured (`changefeed server --auth-token` or LAKEFEED_API_TOKEN), every request but the
health check must carry `Authorization: Bearer <token>`; anything else is answered 401 with
`WWW-Authenticate: Bearer` and the API's error body. The comparison is constant-time.
"""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

# Liveness probes need no secret and learn nothing from it.
OPEN_PATHS = frozenset({"/api/v2/health"})


class BearerTokenMiddleware:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        message = ("missing Authorization: Bearer <token> header" if not given
                   else "the bearer token does not match the server's --auth-token")
        response = JSONResponse({"error": "unauthorized", "message": message, "field": None}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer realm="changefeed"'})
        await response(scope, receive, send)
