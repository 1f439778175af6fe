"""Topic changes a broker of a cluster forwards to the active controller: CreateTopics, CreatePartitions,
DeleteTopics, topic AlterConfigs and auto-creation. Each answers once the change has reached this broker's
own metadata, so the client's next request here already sees it."""

from __future__ import annotations

import logging
import uuid

from broker.cluster.controller_client import ControllerRejected, ControllerUnavailable
from broker.cluster.node_view import NodeView
from broker.controller.state import TopicInfo
from broker.coordinator.internal_topics import BY_NAME

log = logging.getLogger("broker.cluster")
_APPLY_TIMEOUT_S = 10.0


class TopicAdmin:
    def __init__(self, node: NodeView) -> None:
        self.node = node
        self.client = node.client
        self.config = node.config
        self._creating: set[str] = set()

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
        assignment: list[list[int]] | None = None,
    ) -> TopicInfo:
        if replication_factor == -1:
            replication_factor = self.config.int("default.replication.factor")
        topic_id = uuid.uuid4().hex
        answer = await self.client.call("create_topic", name=name, partitions=partitions,
                                        replication_factor=replication_factor, topic_id=topic_id,
                                        configs=configs, assignment=assignment)
        await self.node.wait_applied(int(answer.get("index", 0)), _APPLY_TIMEOUT_S, f"topic {name!r}")
        info = self.node.meta.topics.get(name)
        if info is not None and info.topic_id != topic_id:  # another create of the name was applied first
            raise ControllerRejected("TOPIC_ALREADY_EXISTS", f"topic {name!r} already exists")
        if info is None or self.node.state.topics.get(name) is None:
            raise ControllerUnavailable(f"topic {name!r} was accepted but is not on this broker")
        return info

    async def create_partitions(
        self, name: str, count: int, assignment: list[list[int]] | None, validate_only: bool
    ) -> None:
        """The controller validates and places the new partitions; returns once this broker has applied them
        (their logs exist here and its replica roles for them are set)."""
        answer = await self.client.call("create_partitions", topic=name, count=count, assignment=assignment,
                                        validate_only=validate_only)
        if not validate_only:
            await self.node.wait_applied(int(answer.get("index", 0)), _APPLY_TIMEOUT_S, f"new partitions of {name!r}")

    async def delete_topic(self, name: str) -> None:
        answer = await self.client.call("delete_topic", name=name)
        await self.node.wait_applied(int(answer.get("index", 0)), _APPLY_TIMEOUT_S, f"deleting {name!r}")

    def propose_configs(self, name: str, old: dict[str, str], new: dict[str, str]) -> None:
        """Send a topic's changed configs to the controller (AlterConfigs on any broker)."""
        changes: dict[str, str | None] = {k: v for k, v in new.items() if old.get(k) != v}
        changes.update({k: None for k in old if k not in new})
        if changes:
            self.node.spawn(self._alter_configs(name, changes))

    async def _alter_configs(self, name: str, changes: dict[str, str | None]) -> None:
        for key, value in changes.items():
            try:
                await self.client.call("alter_config", resource=f"topic:{name}", key=key, value=value)
            except (ControllerUnavailable, ControllerRejected) as exc:
                log.error("config %s of topic %r not replicated (%s); this broker reverts to the cluster's value",
                          key, name, exc)

    def auto_create(self, name: str) -> bool:
        """Ask the controller to create `name` in the background; False when auto-creation is off."""
        if name not in BY_NAME and not self.config.bool("auto.create.topics.enable"):
            return False
        if name not in self._creating:
            self._creating.add(name)
            self.node.spawn(self._create_in_background(name))
        return True

    async def _create_in_background(self, name: str) -> None:
        try:
            spec = BY_NAME.get(name)
            if spec is not None:
                live = len(self.node.meta.live_brokers())
                factor = max(min(self.config.int(spec.replication_key), live), 1)
                await self.create_topic(name, self.config.int(spec.partitions_key), factor, dict(spec.configs))
            else:
                await self.create_topic(name, self.config.int("num.partitions"), -1, {})
        except ControllerRejected as exc:
            if exc.kafka_error != "TOPIC_ALREADY_EXISTS":
                log.warning("auto-creating topic %r failed: %s", name, exc)
        except ControllerUnavailable as exc:
            log.warning("auto-creating topic %r failed: %s", name, exc)
        finally:
            self._creating.discard(name)
