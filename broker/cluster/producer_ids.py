"""Producer ids on a cluster: blocks allocated by the controller, handed out one by one by this broker.

Each broker counting from its own file (what a single node does) would give the same id to two
producers connected to different brokers, and their sequence numbers would clash on every partition
both write to. As in Kafka, the controller hands out disjoint blocks through the metadata log; a block
counts only once this broker has applied its record, so one from a controller that died before
committing it is never used.
"""

from __future__ import annotations

import asyncio

from broker.cluster.controller_client import ControllerUnavailable
from broker.cluster.node_view import NodeView
from broker.controller.state import PRODUCER_IDS_BLOCK_SIZE


class ProducerIdBlocks:
    def __init__(self, node: NodeView) -> None:
        self.node = node
        self._next = self._end = 0
        self._lock = asyncio.Lock()

    async def next_id(self, timeout_s: float = 10.0) -> int:
        async with self._lock:
            if self._next >= self._end:
                first = await self._allocate(timeout_s)
                self._next, self._end = first, first + PRODUCER_IDS_BLOCK_SIZE
            producer_id = self._next
            self._next += 1
            return producer_id

    async def _allocate(self, timeout_s: float) -> int:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        node = self.node
        while loop.time() < deadline:
            answer = await node.client.call("allocate_producer_ids", deadline_s=deadline - loop.time(),
                                            broker_id=node.node_id)
            index, first = int(answer["index"]), int(answer["first_id"])
            await node.wait_applied(index, max(deadline - loop.time(), 0.0), "a producer id block")
            if node.meta.producer_id_blocks.get(node.node_id) == first:
                return first
            # Otherwise that controller lost its leadership before committing the block: ask again.
        raise ControllerUnavailable(f"no producer id block from the controller within {timeout_s:.0f} s")
