"""The pipeline's YAML config, checked before Spark starts.

    source:
      bootstrap_servers: 127.0.0.1:9092
      topics: [cdc]                 # or topic_pattern: "cdc-.*"
      starting_offsets: earliest    # earliest | latest
      max_offsets_per_trigger: 100000   # optional bound on records per micro-batch
    target:
      path: /data/delta             # one Delta table per source table at <path>/<database>/<table>
      scd_type: 1                   # 1: the table as MySQL has it; 2: every version with valid-from/to
    checkpoint: /data/checkpoints/cdc
    trigger:
      available_now: true           # or processing_time: "10 seconds"
    source_time_zone: UTC

Every error names the key path, the bad value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from spark_pipelines.errors import ConfigError

STARTING_OFFSETS = ("earliest", "latest")


@dataclass(frozen=True)
class SourceConfig:
    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None  # bounds a micro-batch (and a catch-up's memory)


@dataclass(frozen=True)
class PipelineConfig:
    source: SourceConfig
    target_path: str
    checkpoint: str
    available_now: bool = True
    processing_time: str | None = None
    source_time_zone: str = "UTC"
    scd_type: int = 1

    def table_path(self, database: str, table: str) -> str:
        return f"{self.target_path.rstrip('/')}/{database}/{table}"


def _section(data: dict[str, Any], key: str, path: str, required: bool = True) -> dict[str, Any]:
    value = data.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}{key}: expected a mapping, got {value!r}")
    return value


def _text(data: dict[str, Any], key: str, path: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}{key}: expected a non-empty string, got {value!r}")
    return value


def _unknown(data: dict[str, Any], allowed: set[str], path: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ConfigError(f"{path}{extra[0]}: unknown key; allowed here: {', '.join(sorted(allowed))}")


def parse_config(data: Any) -> PipelineConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"the config must be a YAML mapping, got {type(data).__name__}")
    _unknown(data, {"source", "target", "checkpoint", "trigger", "source_time_zone"}, "")
    source = _section(data, "source", "")
    _unknown(source, {"bootstrap_servers", "topics", "topic_pattern", "starting_offsets", "max_offsets_per_trigger"},
             "source.")
    limit = source.get("max_offsets_per_trigger")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ConfigError(f"source.max_offsets_per_trigger: expected a whole number >= 1, got {limit!r}")
    topics = source.get("topics", [])
    if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"source.topics: expected a list of topic names, got {topics!r}")
    pattern = source.get("topic_pattern")
    if bool(topics) == bool(pattern):
        raise ConfigError("source: set exactly one of topics (a list) or topic_pattern (a regex)")
    offsets = source.get("starting_offsets", "earliest")
    if offsets not in STARTING_OFFSETS:
        raise ConfigError(f"source.starting_offsets: {offsets!r} is not one of {', '.join(STARTING_OFFSETS)}")
    target = _section(data, "target", "")
    _unknown(target, {"path", "scd_type"}, "target.")
    scd_type = target.get("scd_type", 1)
    if scd_type not in (1, 2):
        raise ConfigError(f"target.scd_type: {scd_type!r} is not one of 1, 2")
    trigger = _section(data, "trigger", "", required=False) or {"available_now": True}
    _unknown(trigger, {"available_now", "processing_time"}, "trigger.")
    if ("processing_time" in trigger) == bool(trigger.get("available_now")):
        raise ConfigError("trigger: set exactly one of available_now: true or processing_time: '<n> seconds'")
    return PipelineConfig(
        source=SourceConfig(_text(source, "bootstrap_servers", "source."), tuple(topics), pattern, offsets, limit),
        target_path=_text(target, "path", "target."),
        checkpoint=_text(data, "checkpoint", ""),
        available_now=bool(trigger.get("available_now")),
        processing_time=trigger.get("processing_time"),
        source_time_zone=_text(data, "source_time_zone", "", "UTC"),
        scd_type=scd_type,
    )


def load_config(path: Path) -> PipelineConfig:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the config {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    return parse_config(data)
