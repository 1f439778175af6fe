"""Keep the broker's local topic registry equal to the cluster metadata's view of one topic.

Handlers keep reading topics, partition counts and configs from `BrokerState.topics`; in a
cluster that registry is a copy of the controller's metadata, updated as records are applied.
"""

from __future__ import annotations

import uuid

from broker.controller.state import TopicInfo
from broker.core.state import BrokerState
from broker.topics import Topic


def sync_topic(state: BrokerState, info: TopicInfo, config_changes: dict[str, str]) -> Topic:
    topic_id = uuid.UUID(info.topic_id)
    configs = {**dict(info.configs), **config_changes}
    local = state.topics.get(info.name)
    if local is not None and local.topic_id != topic_id:
        # Deleted and created again while this broker was away: the old data is not this topic's.
        state.delete_topic(info.name)
        state.offsets.delete_topic(info.name)
        local = None
    if local is None:
        return state.create_topic(info.name, len(info.partitions), configs, topic_id)
    if local.partitions != len(info.partitions):
        local = state.add_partitions(local, len(info.partitions))
    if local.configs != configs:
        local = state.alter_topic_configs(local, configs, replicate=False)
    return local
