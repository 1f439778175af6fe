"""The API keys and version ranges this broker serves, and the kio entity classes behind them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_entity_module
from kio.schema.index import api_key_map
from kio.static.constants import EntityType


@dataclass(frozen=True, slots=True)
class ApiRange:
    key: int
    name: str
    min_version: int
    max_version: int


# Produce is advertised from v0 as Apache Kafka 4 does (librdkafka < 2.8 disables compression
# otherwise, KAFKA-18659) but v0-2 requests are answered UNSUPPORTED_VERSION: records are served in
# RecordBatch v2 (Produce v3+) only. See broker/protocol/legacy_produce.py.
_RANGES: tuple[tuple[str, int, int], ...] = (
    ("produce", 0, 12),
    ("fetch", 4, 16),
    ("list_offsets", 1, 8),
    ("metadata", 0, 12),
    ("offset_commit", 2, 9),
    ("offset_fetch", 1, 8),
    ("find_coordinator", 0, 4),
    ("join_group", 0, 9),
    ("heartbeat", 0, 4),
    ("leave_group", 0, 5),
    ("sync_group", 0, 5),
    ("describe_groups", 0, 5),
    ("list_groups", 0, 4),
    ("api_versions", 0, 4),
    ("create_topics", 2, 7),
    ("delete_topics", 1, 6),
    ("init_producer_id", 0, 4),
    ("delete_groups", 0, 2),
    ("delete_records", 0, 2),
    ("offset_for_leader_epoch", 2, 4),
    ("describe_configs", 1, 4),
    ("describe_log_dirs", 1, 4),  # v0 removed in Kafka 4.0 (KIP-896)
    ("alter_configs", 0, 2),
    ("create_partitions", 0, 3),
    ("incremental_alter_configs", 0, 1),
    ("describe_cluster", 0, 1),
    ("describe_topic_partitions", 0, 0),
    ("elect_leaders", 0, 2),
    ("list_partition_reassignments", 0, 0),  # always none under way: replicas are never moved between brokers
    # Transactions (broker/coordinator/transactions.py), transaction version 1 (KIP-98/KIP-447): no finalized
    # transaction.version feature is advertised, so clients never use KIP-890's version-2 protocol.
    ("add_partitions_to_txn", 0, 5),
    ("add_offsets_to_txn", 0, 4),
    ("end_txn", 0, 5),
    ("write_txn_markers", 1, 1),
    ("txn_offset_commit", 0, 5),
    ("describe_transactions", 0, 0),
    ("list_transactions", 0, 1),
    # Security (broker/security/), the ranges Kafka 4.3 serves. After SaslHandshake v0 the client sends raw
    # SASL tokens instead of SaslAuthenticate (librdkafka < 2.x needs v0 advertised).
    ("sasl_handshake", 0, 1),
    ("sasl_authenticate", 0, 2),
    ("describe_acls", 1, 3),
    ("create_acls", 1, 3),
    ("delete_acls", 1, 3),
    ("describe_user_scram_credentials", 0, 0),
    ("alter_user_scram_credentials", 0, 0),
)

_KEY_BY_NAME = {name: key for key, name in api_key_map.items()}

SUPPORTED: dict[int, ApiRange] = {
    _KEY_BY_NAME[name]: ApiRange(_KEY_BY_NAME[name], name, low, high) for name, low, high in _RANGES
}

API_VERSIONS_KEY = _KEY_BY_NAME["api_versions"]


def api_key(name: str) -> int:
    return _KEY_BY_NAME[name]


def is_supported(key: int, version: int) -> bool:
    api = SUPPORTED.get(key)
    return api is not None and api.min_version <= version <= api.max_version


@cache
def request_class(key: int, version: int) -> Any:
    """The kio request entity class for a supported (key, version)."""
    return _entity(key, version, EntityType.request)


@cache
def response_module(key: int, version: int) -> Any:
    return load_entity_module(SUPPORTED[key].name, version, EntityType.response)


@cache
def response_class(key: int, version: int) -> Any:
    return _entity(key, version, EntityType.response)


def _entity(key: int, version: int, kind: EntityType) -> Any:
    module = load_entity_module(SUPPORTED[key].name, version, kind)  # type: ignore[arg-type]
    suffix = "Request" if kind is EntityType.request else "Response"
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "__type__", None) is kind and value.__name__.endswith(
            suffix
        ):
            return value
    raise LookupError(f"kio has no {kind.name} entity for api {key} v{version}")
