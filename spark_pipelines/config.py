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

Every error names the key path, the bad value and what is allowed.
"""

from __future__ import annotations

import re
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


@dataclass(frozen=True)
class SourceConfig:
    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None  # bounds a micro-batch (and a catch-up's memory)


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

    def due(self, batch_id: int) -> bool:
        """Maintenance runs after every N-th batch: batch ids N-1, 2N-1, ..."""
        return self.optimize_every_batches > 0 and (batch_id + 1) % self.optimize_every_batches == 0


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
    on_drop_table: str = "tombstone"
    on_rename_table: str = "follow"
    tables: TableRules = field(default_factory=TableRules)
    maintenance: Maintenance = field(default_factory=Maintenance)
    catalog_target: CatalogTarget | None = None
    # Catalog targets: each target database's location, looked up when the job starts (io/catalog.py).
    locations: tuple[tuple[str, str], ...] = ()

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
    _unknown(source, {"bootstrap_servers", "topics", "topic_pattern", "starting_offsets", "max_offsets_per_trigger"},
             "source.")
    topics = source.get("topics", [])
    if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"source.topics: expected a list of topic names, got {topics!r}")
    pattern = source.get("topic_pattern")
    if bool(topics) == bool(pattern):
        raise ConfigError("source: set exactly one of topics (a list) or topic_pattern (a regex)")
    return SourceConfig(
        _text(source, "bootstrap_servers", "source."), tuple(topics), pattern,
        _choice(source, "starting_offsets", "source.", STARTING_OFFSETS),
        _count(source, "max_offsets_per_trigger", "source.", 1, None),
    )


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
    _unknown(data, {"source", "target", "tables", "maintenance", "checkpoint", "trigger", "source_time_zone"}, "")
    source = _source(data)
    target = _section(data, "target", "")
    _unknown(target, {"path", "catalog", "database", "scd_type", "on_drop_table", "on_rename_table"}, "target.")
    if ("path" in target) == ("database" in target):
        raise ConfigError("target: set exactly one of path (a directory for the Delta tables) or database "
                          "(with an optional catalog, default spark_catalog)")
    if "catalog" in target and "database" not in target:
        raise ConfigError("target.catalog: needs target.database (and no target.path)")
    catalog_target = None
    if "database" in target:
        catalog_target = CatalogTarget(_text(target, "catalog", "target.", "spark_catalog"),
                                       _text(target, "database", "target."))
    trigger = _section(data, "trigger", "", required=False) or {"available_now": True}
    _unknown(trigger, {"available_now", "processing_time"}, "trigger.")
    if ("processing_time" in trigger) == bool(trigger.get("available_now")):
        raise ConfigError("trigger: set exactly one of available_now: true or processing_time: '<n> seconds'")
    return PipelineConfig(
        source=source,
        target_path=_text(target, "path", "target.") if catalog_target is None else None,
        checkpoint=_text(data, "checkpoint", ""),
        available_now=bool(trigger.get("available_now")),
        processing_time=trigger.get("processing_time"),
        source_time_zone=_text(data, "source_time_zone", "", "UTC"),
        scd_type=_choice(target, "scd_type", "target.", (1, 2)),
        on_drop_table=_choice(target, "on_drop_table", "target.", DROP_POLICIES),
        on_rename_table=_choice(target, "on_rename_table", "target.", RENAME_POLICIES),
        tables=_tables(data),
        maintenance=_maintenance(data),
        catalog_target=catalog_target,
    )


def load_config(path: Path) -> PipelineConfig:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the config {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    return parse_config(data)
