"""What the cluster node's helpers (topic administration, producer-id blocks) use of `ClusterNode`.

A protocol rather than the class itself, so that they do not import `broker.cluster.node`, which builds
them: no import cycle inside broker/ (tests/broker/test_structure.py checks it).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from broker.cluster.controller_client import ControllerClient
from broker.config import BrokerConfig
from broker.controller.state import MetadataState
from broker.core.state import BrokerState


class NodeView(Protocol):
    node_id: int
    config: BrokerConfig
    client: ControllerClient
    meta: MetadataState
    state: BrokerState

    async def wait_applied(self, index: int, timeout_s: float, what: str) -> None: ...

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None: ...
