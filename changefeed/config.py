"""The YAML changefeed config (`--config cf.yaml`), validated into a frozen value.

Every problem is a ConfigError naming the key path (`sink.dispatchers[1].partition`), the bad value
and what is allowed, so an operator can fix the file without reading code. Keys follow TiCDC's
changefeed config where it has one (kebab-case):

    case-sensitive: false
    snapshot-mode: initial            # initial | never | initial_only
    memory-quota: 67108864            # bytes in flight to the sink
    changefeed-error-stuck-duration: 30m
    force-replicate: false            # true: also capture tables without a primary/NOT NULL unique key
    filter:
      rules: ["shop.*", "!shop.tmp_*"]
      event-filters:
        - {matcher: ["shop.orders"], ignore-event: ["delete"], ignore-sql: ["^DROP"]}
    sink:
      dispatchers:
        - {matcher: ["shop.*"], topic: "cdc_{schema}_{table}", partition: index-value}
      enable-tidb-extension: false
      content-compatible: false         # canal-JSON mysqlType = the server's COLUMN_TYPE
      only-output-updated-columns: false
      delete-only-output-handle-key-columns: false   # not with force-replicate (as TiCDC)
      output-raw-change-event: false
      large-message-handle: none      # none | handle-key-only | claim-check
      claim-check-storage-uri: file:///var/lib/lakefeed/claims
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from changefeed.dispatch.router import STRATEGIES, DispatchRule
from changefeed.dispatch.topic import check_topic_expression
from changefeed.errors import ConfigError
from changefeed.filter import ChangeFilter, EventFilterRule, TableFilter
from changefeed.source.capture import SNAPSHOT_MODES

LARGE_MESSAGE_POLICIES = ("none", "handle-key-only", "claim-check")
_DURATION = re.compile(r"^(\d+)(ms|s|m|h)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class SinkOptions:
    dispatchers: tuple[DispatchRule, ...] = ()
    enable_tidb_extension: bool = False
    output_raw_change_event: bool = False
    large_message_handle: str = "none"
    claim_check_storage_uri: str | None = None
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False


@dataclass(frozen=True)
class ChangefeedConfig:
    case_sensitive: bool = False
    snapshot_mode: str = "never"
    memory_quota: int = 64 * 1024 * 1024
    error_stuck_duration_s: float = 1800.0
    filter_rules: tuple[str, ...] = ("*.*",)
    event_filters: tuple[EventFilterRule, ...] = ()
    sink: SinkOptions = field(default_factory=SinkOptions)
    # TiCDC's force-replicate: capture tables that have neither a primary key nor a NOT NULL unique
    # key instead of refusing them at create (their rows carry no key to merge by downstream).
    force_replicate: bool = False

    def change_filter(self, database: str | None = None) -> ChangeFilter:
        """The filter; `database` (the source URI's path) limits it to that one database."""
        return ChangeFilter(TableFilter(self.filter_rules, self.case_sensitive, database), self.event_filters)


class _Reader:
    """Reads one mapping, remembering its path; unknown keys are errors (typos must not pass)."""

    def __init__(self, raw: Any, path: str, known: tuple[str, ...]) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{path or 'the config'} must be a mapping of keys to values, got {_show(raw)}")
        self.raw, self.path = raw, path
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            raise ConfigError(f"unknown key {self._at(unknown[0])}; allowed here: {', '.join(known)}")

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str, default: Any) -> Any:
        return self.raw.get(key, default)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self._at(key)}: {_show(value)} is not a boolean; use true or false")
        return value

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.raw.get(key, default)
        if value not in allowed:
            raise ConfigError(f"{self._at(key)}: {_show(value)} is not allowed; allowed: {', '.join(allowed)}")
        return str(value)

    def positive_int(self, key: str, default: int) -> int:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{self._at(key)}: {_show(value)} is not allowed; use a positive integer (bytes)")
        return value

    def duration(self, key: str, default: float) -> float:
        value = self.raw.get(key)
        if value is None:
            return default
        match = _DURATION.match(str(value))
        if not match or int(match.group(1)) == 0:
            raise ConfigError(f"{self._at(key)}: {_show(value)} is not a duration; use e.g. 500ms, 30s, 10m, 1h")
        return int(match.group(1)) * _UNITS[match.group(2)]

    def strings(self, key: str, default: tuple[str, ...], *, non_empty: bool = False) -> tuple[str, ...]:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value) or (
            non_empty and not value
        ):
            raise ConfigError(f"{self._at(key)}: {_show(value)} is not allowed; use a list of non-empty strings")
        return tuple(value)

    def items(self, key: str) -> list[tuple[str, Any]]:
        value = self.raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ConfigError(f"{self._at(key)}: {_show(value)} is not allowed; use a list of mappings")
        return [(f"{self._at(key)}[{i}]", item) for i, item in enumerate(value)]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _event_filter(raw: Any, path: str, case_sensitive: bool) -> EventFilterRule:
    r = _Reader(raw, path, ("matcher", "ignore-event", "ignore-sql"))
    try:
        return EventFilterRule(
            r.strings("matcher", ("*.*",), non_empty=True),
            r.strings("ignore-event", ()),
            r.strings("ignore-sql", ()),
            case_sensitive,
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _dispatcher(raw: Any, path: str) -> DispatchRule:
    r = _Reader(raw, path, ("matcher", "partition", "topic", "index", "columns"))
    partition = r.choice("partition", "default", STRATEGIES)
    columns = r.strings("columns", ())
    if partition == "columns" and not columns:
        raise ConfigError(f"{path}.columns: partition=columns needs a non-empty list of column names")
    index = r.get("index", None)
    if index is not None and not (isinstance(index, str) and index):
        raise ConfigError(f"{path}.index: {_show(index)} is not allowed; use the index name, e.g. PRIMARY")
    topic = r.get("topic", None)
    if topic is not None and not (isinstance(topic, str) and topic):
        raise ConfigError(f"{path}.topic: {_show(topic)} is not allowed; use an expression like cdc_{{schema}}")
    if topic is not None:
        try:
            check_topic_expression(topic)
        except ConfigError as exc:
            raise ConfigError(f"{path}.topic: {exc}") from exc
    return DispatchRule(
        r.strings("matcher", (), non_empty=True) or _missing(f"{path}.matcher"),
        partition,
        topic,
        (index,) if index else None,
        columns,
    )


def _missing(path: str) -> tuple[str, ...]:
    raise ConfigError(f"{path} is required: a list of table patterns such as [\"shop.*\"]")


def _sink(raw: Any, path: str) -> SinkOptions:
    r = _Reader(raw, path, ("dispatchers", "enable-tidb-extension", "output-raw-change-event",
                            "large-message-handle", "claim-check-storage-uri", "content-compatible",
                            "only-output-updated-columns", "delete-only-output-handle-key-columns"))
    policy = r.choice("large-message-handle", "none", LARGE_MESSAGE_POLICIES)
    storage = r.get("claim-check-storage-uri", None)
    if policy == "claim-check" and not (isinstance(storage, str) and storage.startswith("file://")):
        raise ConfigError(
            f"{path}.claim-check-storage-uri: {_show(storage)} is not allowed; large-message-handle=claim-check "
            "needs a file:// URI")
    return SinkOptions(
        tuple(_dispatcher(item, p) for p, item in r.items("dispatchers")),
        r.boolean("enable-tidb-extension", False),
        r.boolean("output-raw-change-event", False),
        policy,
        storage,
        r.boolean("content-compatible", False),
        r.boolean("only-output-updated-columns", False),
        r.boolean("delete-only-output-handle-key-columns", False),
    )


def parse_config(data: Any) -> ChangefeedConfig:
    """Validate an already-loaded YAML document (a mapping, or None for defaults)."""
    top = _Reader(data, "", ("case-sensitive", "snapshot-mode", "memory-quota",
                             "changefeed-error-stuck-duration", "force-replicate", "filter", "sink"))
    case_sensitive = top.boolean("case-sensitive", False)
    flt = _Reader(top.get("filter", None), "filter", ("rules", "event-filters"))
    rules = flt.strings("rules", ("*.*",), non_empty=True)
    try:
        TableFilter(rules, case_sensitive)
    except ConfigError as exc:
        raise ConfigError(f"filter.rules: {exc}") from exc
    sink = _sink(top.get("sink", None), "sink")
    force_replicate = top.boolean("force-replicate", False)
    if sink.delete_only_output_handle_key_columns and force_replicate:
        # TiCDC refuses the pair: a table without a handle key would send DELETEs with no columns.
        raise ConfigError("sink.delete-only-output-handle-key-columns: true is not allowed with force-replicate: "
                          "true (tables without a key would send empty deletes); turn one of them off")
    return ChangefeedConfig(
        case_sensitive=case_sensitive,
        snapshot_mode=top.choice("snapshot-mode", "never", SNAPSHOT_MODES),
        memory_quota=top.positive_int("memory-quota", 64 * 1024 * 1024),
        error_stuck_duration_s=top.duration("changefeed-error-stuck-duration", 1800.0),
        filter_rules=rules,
        event_filters=tuple(_event_filter(item, p, case_sensitive) for p, item in flt.items("event-filters")),
        sink=sink,
        force_replicate=force_replicate,
    )


def load_config(text: str) -> ChangefeedConfig:
    """Parse YAML text; syntax errors say the line and column."""
    try:
        data = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"the changefeed config is not valid YAML: {exc}") from exc
    return parse_config(data)
