"""__consumer_offsets records and placement, as Apache Kafka defines them; replay through a log."""

from __future__ import annotations

import pytest

from broker.coordinator.offsets import CommittedOffset, OffsetChange, OffsetStore
from broker.coordinator.offsets_codec import (
    OffsetKey,
    OffsetRecordError,
    OffsetValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from broker.coordinator.offsets_topic import encode_batch, java_string_hash, partition_for, replay
from broker.log_store import LogConfig, MemoryLogStore


def test_java_string_hash_and_kafka_partition() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: Utils.abs gives 0
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("é€") == 233 * 31 + 8364  # UTF-16 code units, not UTF-8 bytes
    assert all(0 <= partition_for(f"group-{i}", 50) < 50 for i in range(200))


def test_key_and_value_layouts_roundtrip() -> None:
    key = OffsetKey("g", "topic", 3)
    assert encode_key(key) == b"\x00\x01\x00\x01g\x00\x05topic\x00\x00\x00\x03"
    assert decode_key(encode_key(key)) == key
    value = OffsetValue(42, 0, None, 1_700_000_000_000)
    assert decode_value(encode_value(value)) == value
    assert decode_key(b"\x00\x02\x00\x02gg") == "gg"  # group metadata key
    with pytest.raises(OffsetRecordError, match="key version 9"):
        decode_key(b"\x00\x09")
    with pytest.raises(OffsetRecordError, match="truncated"):
        decode_value(encode_value(value)[:-3])


def test_store_journals_before_memory_and_replays_with_tombstones() -> None:
    log = MemoryLogStore().open("__consumer_offsets", 0, LogConfig())
    store = OffsetStore(journal=lambda group, changes: log.append(encode_batch(group, changes, 1), 0) and None)
    store.commit_many("g", [OffsetChange("t", 0, CommittedOffset(5, 0, "m")),
                            OffsetChange("t", 1, CommittedOffset(7, -1, None))])
    store.commit("h", "u", 0, CommittedOffset(1, 0, ""))
    store.delete_group("h")
    store.commit("g", "t", 0, CommittedOffset(9, 0, "later"))
    replayed = OffsetStore()
    assert replay(log, replayed, lambda group, value: None) == 5
    assert replayed.fetch("g", "t", 0) == CommittedOffset(9, 0, "later")
    assert replayed.fetch("g", "t", 1) == CommittedOffset(7, -1, None)
    assert replayed.groups() == ["g"]


def test_a_failing_journal_leaves_memory_unchanged() -> None:
    def broken(group: str, changes: list[OffsetChange]) -> None:
        raise OSError("disk full")

    store = OffsetStore(journal=broken)
    with pytest.raises(OSError):
        store.commit("g", "t", 0, CommittedOffset(5, 0, None))
    assert store.fetch("g", "t", 0) is None


def test_group_metadata_records_round_trip_through_a_partition_log() -> None:
    from broker.coordinator.offsets_codec import GroupMetadataValue, StoredMember
    from broker.coordinator.offsets_topic import apply_batch, encode_group_batch

    value = GroupMetadataValue("consumer", 7, "range", "m-1", 1_700_000_000_000, (
        StoredMember("m-1", None, "client-a", "/127.0.0.1", 300_000, 10_000, b"\x00sub", b"\x00assign"),
        StoredMember("m-2", "static-2", "client-b", "/127.0.0.1", 60_000, 6_000, b"", b"\x01"),
    ))
    seen: list[tuple[str, GroupMetadataValue | None]] = []
    applied = apply_batch(encode_group_batch("g", value, 1_700_000_000_000), OffsetStore(),
                          lambda group, v: seen.append((group, v)))
    applied += apply_batch(encode_group_batch("g", None, 1_700_000_000_001), OffsetStore(),
                           lambda group, v: seen.append((group, v)))
    assert applied == 2
    assert seen == [("g", value), ("g", None)]
