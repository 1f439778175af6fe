"""AlterConfigs (33): replace a topic's whole set of overrides (configs left out go back to default)."""

from __future__ import annotations

from typing import Any

from broker.handlers._configs import alter
from broker.handlers.context import BrokerState, Request
from broker.topics import Topic


def _new_configs(state: BrokerState, topic: Topic, resource: Any) -> dict[str, str | None]:
    return {c.name: c.value for c in resource.configs}


async def handle(state: BrokerState, request: Request) -> Any:
    return await alter(state, request, _new_configs)
