"""The YAML changefeed config: valid files load; every error names the key path, the value and what is allowed."""

import pytest

from changefeed.config import load_config
from changefeed.errors import ConfigError
from changefeed.model import TableName

GOOD = """
case-sensitive: false
snapshot-mode: initial
memory-quota: 1048576
changefeed-error-stuck-duration: 10m
filter:
  rules: ["shop.*", "!shop.tmp_*"]
  event-filters:
    - {matcher: ["shop.orders"], ignore-event: ["delete"], ignore-sql: ["^DROP"]}
sink:
  dispatchers:
    - {matcher: ["shop.*"], topic: "cdc_{schema}_{table}", partition: columns, columns: [id]}
  enable-tidb-extension: true
  large-message-handle: claim-check
  claim-check-storage-uri: file:///tmp/claims
"""


def test_a_full_config_loads() -> None:
    config = load_config(GOOD)
    assert config.snapshot_mode == "initial"
    assert config.memory_quota == 1048576
    assert config.error_stuck_duration_s == 600
    assert config.change_filter().keeps_table(TableName("shop", "orders"))
    assert not config.change_filter().keeps_table(TableName("shop", "tmp_1"))
    assert config.sink.dispatchers[0].columns == ("id",)
    assert config.sink.large_message_handle == "claim-check"


def test_empty_config_means_defaults() -> None:
    assert load_config("").filter_rules == ("*.*",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("snapshot-mode: sometimes", ["snapshot-mode", "'sometimes'", "initial, never, initial_only"]),
        ("sink: {dispatchers: [{matcher: ['a.*'], partition: bogus}]}",
         ["sink.dispatchers[0].partition", "'bogus'", "index-value"]),
        ("sink: {dispatchers: [{partition: table}]}", ["sink.dispatchers[0].matcher", "required"]),
        ("memory-quota: -5", ["memory-quota", "-5", "positive integer"]),
        ("changefeed-error-stuck-duration: soon", ["changefeed-error-stuck-duration", "'soon'", "30s"]),
        ("filter: {rules: 'a.*'}", ["filter.rules", "'a.*'", "list of non-empty strings"]),
        ("filter: {event-filters: [{ignore-event: [explode]}]}", ["filter.event-filters[0]", "explode"]),
        ("sink: {large-message-handle: claim-check}", ["sink.claim-check-storage-uri", "file://"]),
        ("sink: {enable-tidb-extension: maybe}", ["sink.enable-tidb-extension", "'maybe'", "true or false"]),
        ("snapshotmode: never", ["unknown key snapshotmode", "snapshot-mode"]),
        ("sink: {dispatchers: [{matcher: ['a.*'], partition: columns}]}", ["sink.dispatchers[0].columns"]),
        ("filter: [1, 2]", ["filter must be a mapping"]),
        ("a: [", ["not valid YAML", "line"]),
    ],
)
def test_errors_name_path_value_and_allowed(text: str, expected: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    for part in expected:
        assert part in str(info.value)


def test_topic_placeholders_are_checked_with_the_key_path() -> None:
    with pytest.raises(ConfigError, match=r"sink.dispatchers\[0\].topic: .*\{db\}; valid placeholders: "
                                          r"\{schema\}, \{table\}"):
        load_config("sink:\n  dispatchers:\n    - {matcher: ['*.*'], topic: 'cdc_{db}_{table}'}\n")


def test_force_replicate_and_the_source_database() -> None:
    assert load_config("force-replicate: true").force_replicate is True
    assert load_config("").force_replicate is False
    with pytest.raises(ConfigError, match="force-replicate"):
        load_config("force-replicate: yes please")
    keep = load_config("filter:\n  rules: ['*.*', '!shop.tmp']").change_filter("Shop")
    assert keep.keeps_table(TableName("shop", "orders"))
    assert not keep.keeps_table(TableName("other", "orders"))  # outside the URI's database
    assert not keep.keeps_table(TableName("shop", "tmp"))  # the rules still apply inside it
    assert keep.tables.matches_schema("shop") and not keep.tables.matches_schema("other")
