"""What a handler gets: the broker's core (`BrokerState`, broker/core/state.py) and the request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.core.state import BrokerState
from broker.protocol.framing import RequestHeader

__all__ = ["BrokerState", "Request"]


@dataclass(frozen=True)
class Request:
    header: RequestHeader
    body: Any
    client_host: str = ""
