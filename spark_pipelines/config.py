"""The pipeline's YAML config, checked before Spark starts.

    source:
      bootstrap_servers: 127.0.0.1:9092
      topics: [cdc]                 # or topic_pattern: "cdc-.*"
      starting_offsets: earliest    # earliest | latest
      max_offsets_per_trigger: 100000   # optional bound on records per micro-batch
    target:
      path: /data/delta             # one Delta table per source table at <path>/<database>/<table>
      # or, instead of path, tables in a catalog: <catalog>.<database>.<table>, stored under the
      # database's location and registered there (the source database is not part of the name)
      # catalog: spark_catalog
      # database: lake
      scd_type: 1                   # 1: the table as MySQL has it; 2: every version with valid-from/to
      on_drop_table: tombstone      # tombstone: rows become tombstones | ignore: keep the last rows
      on_rename_table: follow       # follow: rows move to the new name | ignore: the new name starts empty
      merge_every_seconds: 0        # 0: MERGE every micro-batch; N: merge-on-read, batches wait in a change
                                    # buffer and are MERGEd every N seconds (read with io/current.py)
    tables:                         # glob patterns over "database.table" (case-sensitive, as MySQL on Linux)
      include: ["shop.*"]           # default: every table
      exclude: ["shop.tmp_*"]
      rename: {shop.acct: crm.accounts}   # the Delta table's database.table
    maintenance:
      change_data_feed: false       # delta.enableChangeDataFeed on the tables the pipeline creates
      optimize_every_batches: 0     # OPTIMIZE the tables a batch touched every N batches (0: never)
      vacuum_retain_hours: null     # VACUUM them with this retention on the same cadence (null: never)
      purge_tombstones_after_seconds: null   # drop older tombstones on that cadence (keep above retention.ms)
    checkpoint: /data/checkpoints/cdc
    trigger:
      available_now: true           # or processing_time: "10 seconds"
    source_time_zone: UTC
    spark:
      conf: {spark.sql.warehouse.dir: /data/warehouse}   # Spark settings (spark_pipelines/session.py)

with, under source, `options:` passed to Spark's Kafka source as they are (`kafka.security.protocol`,
`kafka.ssl.*`, `kafka.sasl.*`, other `kafka.*` client settings, and the source's own options).

Every error names the key path, the bad value and what is allowed, before Spark starts.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from spark_pipelines.errors import ConfigError

STARTING_OFFSETS = ("earliest", "latest")
DROP_POLICIES = ("tombstone", "ignore")
RENAME_POLICIES = ("follow", "ignore")
_QUALIFIED = re.compile(r"^[^.\s/]+\.[^.\s/]+$")
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")
# Trigger.ProcessingTime takes an interval string (Spark's CalendarInterval syntax): "10 seconds",
# "1 minute 30 seconds", optionally after "interval". Months and years are refused there too.
_INTERVAL_UNIT = r"(?:milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?)"
_INTERVAL = re.compile(rf"^\s*(?:interval\s+)?\d+\s*{_INTERVAL_UNIT}(?:\s+\d+\s*{_INTERVAL_UNIT})*\s*$",
                       re.IGNORECASE)
_OFFSET_ZONE = re.compile(r"^[+-](0\d|1[0-8]):[0-5]\d$")
# Options the pipeline sets on the Kafka source itself; `kafka.*` options Spark's Kafka source refuses
# ("Structured Streaming + Kafka Integration Guide", "Kafka Specific Configurations").
_OWN_SOURCE_OPTIONS = {
    "kafka.bootstrap.servers": "source.bootstrap_servers", "subscribe": "source.topics",
    "subscribepattern": "source.topic_pattern", "assign": "source.topics", "startingoffsets":
    "source.starting_offsets", "maxoffsetspertrigger": "source.max_offsets_per_trigger",
    "failondataloss": "nothing: the pipeline always stops rather than skip lost records",
}
_REFUSED_KAFKA = ("kafka.group.id", "kafka.auto.offset.reset", "kafka.key.deserializer",
                  "kafka.value.deserializer", "kafka.key.serializer", "kafka.value.serializer",
                  "kafka.enable.auto.commit", "kafka.interceptor.classes")
# The Kafka source's own options that are not `kafka.*` client settings (same guide, "Reading Data").
_SOURCE_OPTIONS = {"startingtimestamp", "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
                   "kafkaconsumer.polltimeoutms", "fetchoffset.numretries", "fetchoffset.retryintervalms",
                   "minoffsetspertrigger", "maxtriggerdelay", "minpartitions", "groupidprefix", "includeheaders"}


@dataclass(frozen=True)
class SourceConfig:
    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None  # bounds a micro-batch (and a catch-up's memory)
    options: tuple[tuple[str, str], ...] = ()  # passed to Spark's Kafka source: TLS, SASL, client settings

    def described(self) -> str:
        """What the source reads, for messages: "topic shop", "topics a, b", "topics matching shop-.*"."""
        if self.topic_pattern:
            return f"topics matching {self.topic_pattern}"
        return ("topic " if len(self.topics) == 1 else "topics ") + ", ".join(self.topics)


@dataclass(frozen=True)
class TableRules:
    """Which source tables the pipeline applies, and under which Delta name."""

    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    renames: tuple[tuple[str, str], ...] = ()  # ("db.table", "target_db.target_table")

    def keeps(self, database: str, table: str) -> bool:
        name = f"{database}.{table}"
        return (any(fnmatchcase(name, p) for p in self.include)
                and not any(fnmatchcase(name, p) for p in self.exclude))

    def target_name(self, database: str, table: str) -> tuple[str, str]:
        target = dict(self.renames).get(f"{database}.{table}")
        if target is None:
            return database, table
        target_db, target_table = target.split(".")
        return target_db, target_table


@dataclass(frozen=True)
class Maintenance:
    change_data_feed: bool = False
    optimize_every_batches: int = 0
    vacuum_retain_hours: int | None = None
    purge_tombstones_after_seconds: int | None = None

    def due(self, first: int, last: int | None = None) -> bool:
        """Maintenance runs after every N-th batch: batch ids N-1, 2N-1, ... A merge of the change buffer
        (merge-on-read) applies batches `first` to `last` at once: it runs maintenance when one of them is such
        a batch, so the cadence stays one per N batches however the merges fall."""
        every = self.optimize_every_batches
        return every > 0 and ((first if last is None else last) + 1) // every > first // every


@dataclass(frozen=True)
class CatalogTarget:
    catalog: str
    database: str


@dataclass(frozen=True)
class PipelineConfig:
    source: SourceConfig
    target_path: str | None  # None: catalog_target names the tables
    checkpoint: str
    available_now: bool = True
    processing_time: str | None = None
    source_time_zone: str = "UTC"
    scd_type: int = 1
    merge_every_seconds: int = 0  # > 0: merge-on-read (io/change_buffer.py)
    on_drop_table: str = "tombstone"
    on_rename_table: str = "follow"
    tables: TableRules = field(default_factory=TableRules)
    maintenance: Maintenance = field(default_factory=Maintenance)
    catalog_target: CatalogTarget | None = None
    # Catalog targets: each target database's location, looked up when the job starts (io/catalog.py).
    locations: tuple[tuple[str, str], ...] = ()
    spark_conf: tuple[tuple[str, str], ...] = ()  # `spark.conf`: settings for the session (session.py)

    def target_name(self, database: str, table: str) -> tuple[str, str]:
        """The Delta table's (database, table); a catalog target puts every table into its one
        database unless tables.rename names another."""
        if self.catalog_target is not None and self.tables.target_name(database, table) == (database, table):
            return self.catalog_target.database, table
        return self.tables.target_name(database, table)

    def target_databases(self) -> list[str]:
        """The catalog databases the tables may land in (catalog targets only)."""
        if self.catalog_target is None:
            return []
        return sorted({self.catalog_target.database, *(t.split(".")[0] for _, t in self.tables.renames)})

    def catalog_name(self, database: str, table: str) -> str | None:
        """`catalog`.`database`.`table` for a catalog target, else None."""
        if self.catalog_target is None:
            return None
        names = (self.catalog_target.catalog, *self.target_name(database, table))
        return ".".join("`" + name.replace("`", "``") + "`" for name in names)

    def table_path(self, database: str, table: str) -> str:
        target_db, target_table = self.target_name(database, table)
        if self.target_path is not None:
            return f"{self.target_path.rstrip('/')}/{target_db}/{target_table}"
        location = dict(self.locations).get(target_db)
        if location is None:
            raise ConfigError(f"the location of catalog database {target_db!r} has not been looked up yet")
        return f"{location.rstrip('/')}/{target_table}"


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


def _choice(data: dict[str, Any], key: str, path: str, allowed: tuple[Any, ...]) -> Any:
    value = data.get(key, allowed[0])
    if value not in allowed:
        raise ConfigError(f"{path}{key}: {value!r} is not one of {', '.join(str(a) for a in allowed)}")
    return value


def _count(data: dict[str, Any], key: str, path: str, minimum: int, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{path}{key}: expected a whole number >= {minimum}, got {value!r}")
    return value


def _patterns(data: dict[str, Any], key: str, default: list[str]) -> tuple[str, ...]:
    value = data.get(key, default)
    if not isinstance(value, list) or not all(isinstance(p, str) and "." in p for p in value):
        raise ConfigError(f"tables.{key}: expected a list of 'database.table' glob patterns "
                          f"(for example ['shop.*']), got {value!r}")
    return tuple(value)


def _unknown(data: dict[str, Any], allowed: set[str], path: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ConfigError(f"{path}{extra[0]}: unknown key; allowed here: {', '.join(sorted(allowed))}")


def _source(data: dict[str, Any]) -> SourceConfig:
    source = _section(data, "source", "")
    _unknown(source, {"bootstrap_servers", "topics", "topic_pattern", "starting_offsets", "max_offsets_per_trigger",
                      "options"}, "source.")
    topics = source.get("topics", [])
    if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"source.topics: expected a list of topic names, got {topics!r}")
    pattern = source.get("topic_pattern")
    if bool(topics) == bool(pattern):
        raise ConfigError("source: set exactly one of topics (a list) or topic_pattern (a regex)")
    if pattern is not None:
        _regex(pattern)
    return SourceConfig(
        _servers(_text(source, "bootstrap_servers", "source.")), tuple(topics), pattern,
        _choice(source, "starting_offsets", "source.", STARTING_OFFSETS),
        _count(source, "max_offsets_per_trigger", "source.", 1, None),
        _source_options(source.get("options")),
    )


def _servers(value: str) -> str:
    for server in value.split(","):
        match = _HOST_PORT.match(server.strip())
        if match is None or not 0 < int(match.group(2)) < 65536:
            raise ConfigError(f"source.bootstrap_servers: {server.strip()!r} is not host:port; write "
                              "'host:port[,host:port...]', for example '127.0.0.1:9092'")
    return value


def _regex(pattern: object) -> None:
    """Spark's subscribePattern is a java.util.regex pattern; Python's syntax refuses the same mistakes
    (unbalanced brackets and parentheses, a dangling quantifier)."""
    if not isinstance(pattern, str):
        raise ConfigError(f"source.topic_pattern: expected a regular expression string, got {pattern!r}")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"source.topic_pattern: {pattern!r} is not a valid regular expression ({exc}); "
                          "for example 'cdc-.*'") from None


def _scalar_map(value: object, path: str, example: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{path}: expected a mapping of setting names to values, for example {example}; "
                          f"got {value!r}")
    out = {}
    for key, item in value.items():
        if isinstance(item, bool):
            item = "true" if item else "false"  # YAML true -> Spark's and Kafka's spelling
        if not isinstance(item, (str, int, float)):
            raise ConfigError(f"{path}.{key}: expected a string or number, got {item!r}")
        out[key] = str(item)
    return out


def _source_options(value: object) -> tuple[tuple[str, str], ...]:
    options = _scalar_map(value, "source.options", "{kafka.security.protocol: SSL}")
    for key in options:
        path = f"source.options.{key}"
        if key.lower() in _OWN_SOURCE_OPTIONS:
            raise ConfigError(f"{path}: the pipeline sets this itself; use {_OWN_SOURCE_OPTIONS[key.lower()]}")
        if key in _REFUSED_KAFKA:
            raise ConfigError(f"{path}: Spark's Kafka source does not accept it (it manages consumer groups, "
                              "offsets and deserialization itself); remove it")
        if not key.startswith("kafka.") and key.lower() not in _SOURCE_OPTIONS:
            raise ConfigError(f"{path}: not a Kafka source option; Kafka client settings take the 'kafka.' "
                              "prefix (kafka.security.protocol, kafka.ssl.truststore.location, "
                              "kafka.sasl.jaas.config, ...)")
    return tuple(sorted(options.items()))


def _spark(data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    section = _section(data, "spark", "", required=False)
    _unknown(section, {"conf"}, "spark.")
    conf = _scalar_map(section.get("conf"), "spark.conf", "{spark.sql.warehouse.dir: /data/warehouse}")
    for key in conf:
        if not key.startswith("spark."):
            raise ConfigError(f"spark.conf.{key}: Spark settings start with 'spark.' (Hadoop ones with "
                              "'spark.hadoop.'); fix the name")
    return tuple(sorted(conf.items()))


def _trigger(data: dict[str, Any]) -> str | None:
    trigger = _section(data, "trigger", "", required=False) or {"available_now": True}
    _unknown(trigger, {"available_now", "processing_time"}, "trigger.")
    if ("processing_time" in trigger) == bool(trigger.get("available_now")):
        raise ConfigError("trigger: set exactly one of available_now: true or processing_time: '<n> seconds'")
    interval = trigger.get("processing_time")
    if interval is not None and (not isinstance(interval, str) or not _INTERVAL.match(interval)):
        raise ConfigError(f"trigger.processing_time: {interval!r} is not an interval; write it as '<n> seconds' "
                          "(or milliseconds, minutes, hours), for example '10 seconds'")
    return interval


def _time_zone(data: dict[str, Any]) -> str:
    """A zone the source's TIMESTAMP text is read in: an IANA region (the tz database, as Java's ZoneId
    and Python's zoneinfo know it), UTC, or a fixed offset such as +08:00."""
    name = _text(data, "source_time_zone", "", "UTC")
    if _OFFSET_ZONE.match(name):
        return name
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"source_time_zone: {name!r} is not a time zone; use an IANA name such as 'UTC' or "
                          "'Asia/Shanghai', or an offset such as '+08:00'") from None
    return name


def _tables(data: dict[str, Any]) -> TableRules:
    tables = _section(data, "tables", "", required=False)
    _unknown(tables, {"include", "exclude", "rename"}, "tables.")
    renames = tables.get("rename", {}) or {}
    if not isinstance(renames, dict):
        raise ConfigError(f"tables.rename: expected a mapping of 'database.table': 'database.table', got {renames!r}")
    for source, target in renames.items():
        for name in (source, target):
            if not isinstance(name, str) or not _QUALIFIED.match(name):
                raise ConfigError(f"tables.rename.{source}: {name!r} is not a plain 'database.table' name "
                                  "(no globs, no slashes)")
    targets = list(renames.values())
    duplicate = next((t for t in targets if targets.count(t) > 1), None)
    if duplicate is not None:
        raise ConfigError(f"tables.rename: two tables are renamed to {duplicate!r}; each needs its own target")
    return TableRules(_patterns(tables, "include", ["*.*"]), _patterns(tables, "exclude", []),
                      tuple(sorted(renames.items())))


def _maintenance(data: dict[str, Any]) -> Maintenance:
    section = _section(data, "maintenance", "", required=False)
    path = "maintenance."
    _unknown(section, {"change_data_feed", "optimize_every_batches", "vacuum_retain_hours",
                       "purge_tombstones_after_seconds"}, path)
    every = _count(section, "optimize_every_batches", path, 0, 0) or 0
    # Delta refuses a retention under 7 days by default: readers and streams may still need the files.
    vacuum = _count(section, "vacuum_retain_hours", path, 168, None)
    purge = _count(section, "purge_tombstones_after_seconds", path, 1, None)
    if (vacuum is not None or purge is not None) and every == 0:
        raise ConfigError(f"{path}optimize_every_batches: 0 never runs maintenance, but vacuum_retain_hours or "
                          "purge_tombstones_after_seconds is set; set optimize_every_batches to the cadence")
    return Maintenance(_choice(section, "change_data_feed", path, (False, True)), every, vacuum, purge)


def parse_config(data: Any) -> PipelineConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"the config must be a YAML mapping, got {type(data).__name__}")
    _unknown(data, {"source", "target", "tables", "maintenance", "checkpoint", "trigger", "source_time_zone",
                    "spark"}, "")
    source = _source(data)
    target = _section(data, "target", "")
    _unknown(target, {"path", "catalog", "database", "scd_type", "on_drop_table", "on_rename_table",
                      "merge_every_seconds"}, "target.")
    if ("path" in target) == ("database" in target):
        raise ConfigError("target: set exactly one of path (a directory for the Delta tables) or database "
                          "(with an optional catalog, default spark_catalog)")
    if "catalog" in target and "database" not in target:
        raise ConfigError("target.catalog: needs target.database (and no target.path)")
    catalog_target = None
    if "database" in target:
        catalog_target = CatalogTarget(_text(target, "catalog", "target.", "spark_catalog"),
                                       _text(target, "database", "target."))
    processing_time = _trigger(data)
    scd_type = _choice(target, "scd_type", "target.", (1, 2))
    merge_every = _count(target, "merge_every_seconds", "target.", 0, 0) or 0
    if merge_every and (catalog_target is not None or scd_type == 2):
        raise ConfigError("target.merge_every_seconds: merge-on-read needs a path target (target.path) and "
                          "scd_type 1; set it to 0, or use a path target with scd_type 1")
    return PipelineConfig(
        source=source,
        target_path=_text(target, "path", "target.") if catalog_target is None else None,
        checkpoint=_text(data, "checkpoint", ""),
        available_now=processing_time is None,
        processing_time=processing_time,
        source_time_zone=_time_zone(data),
        scd_type=scd_type,
        merge_every_seconds=merge_every,
        on_drop_table=_choice(target, "on_drop_table", "target.", DROP_POLICIES),
        on_rename_table=_choice(target, "on_rename_table", "target.", RENAME_POLICIES),
        tables=_tables(data),
        maintenance=_maintenance(data),
        catalog_target=catalog_target,
        spark_conf=_spark(data),
    )


def load_config(path: Path) -> PipelineConfig:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the config {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    return parse_config(data)
