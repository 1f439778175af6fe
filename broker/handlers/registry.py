"""API key -> handler. Every key advertised in ApiVersions has exactly one handler module."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_topic_partitions,
    describe_transactions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
    txn_offset_commit,
)
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import api_key

Handler = Callable[[BrokerState, Request], Awaitable[Any]]

HANDLERS: dict[int, Handler] = {
    api_key("produce"): produce.handle,
    api_key("fetch"): fetch.handle,
    api_key("list_offsets"): list_offsets.handle,
    api_key("metadata"): metadata.handle,
    api_key("offset_commit"): offset_commit.handle,
    api_key("offset_fetch"): offset_fetch.handle,
    api_key("find_coordinator"): find_coordinator.handle,
    api_key("join_group"): join_group.handle,
    api_key("heartbeat"): heartbeat.handle,
    api_key("leave_group"): leave_group.handle,
    api_key("sync_group"): sync_group.handle,
    api_key("describe_groups"): describe_groups.handle,
    api_key("list_groups"): list_groups.handle,
    api_key("api_versions"): api_versions.handle,
    api_key("create_topics"): create_topics.handle,
    api_key("delete_topics"): delete_topics.handle,
    api_key("init_producer_id"): init_producer_id.handle,
    api_key("delete_groups"): delete_groups.handle,
    api_key("delete_records"): delete_records.handle,
    api_key("offset_for_leader_epoch"): offset_for_leader_epoch.handle,
    api_key("describe_configs"): describe_configs.handle,
    api_key("alter_configs"): alter_configs.handle,
    api_key("create_partitions"): create_partitions.handle,
    api_key("incremental_alter_configs"): incremental_alter_configs.handle,
    api_key("describe_cluster"): describe_cluster.handle,
    api_key("describe_log_dirs"): describe_log_dirs.handle,
    api_key("describe_topic_partitions"): describe_topic_partitions.handle,
    api_key("elect_leaders"): elect_leaders.handle,
    api_key("add_partitions_to_txn"): add_partitions_to_txn.handle,
    api_key("add_offsets_to_txn"): add_offsets_to_txn.handle,
    api_key("end_txn"): end_txn.handle,
    api_key("txn_offset_commit"): txn_offset_commit.handle,
    api_key("describe_transactions"): describe_transactions.handle,
    api_key("list_transactions"): list_transactions.handle,
}
