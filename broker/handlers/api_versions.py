"""ApiVersions (18): the API keys and version ranges this broker serves."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import SUPPORTED, api_key, response_class


def api_versions_response(version: int, error: ErrorCode = ErrorCode.none) -> Any:
    cls = response_class(api_key("api_versions"), version)
    entry = nested(cls, "ApiVersion")
    keys = tuple(entry(api_key=a.key, min_version=a.min_version, max_version=a.max_version) for a in SUPPORTED.values())
    return build(cls, error_code=error, api_keys=keys, throttle_time=NO_THROTTLE)


async def handle(state: BrokerState, request: Request) -> Any:
    return api_versions_response(request.header.api_version)
