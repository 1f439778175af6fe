"""Catalog targets (`target.catalog` + `target.database`): the Delta tables live under the catalog
database's location and are registered in it by name, so SQL users read `catalog.database.table`.

The job itself keeps writing by path (every write, DDL and maintenance step is path-based); the catalog
entry is an external-table registration made once per table, after the batch that created it. Delta
reads the schema from the table's log, so later column changes show through the catalog name too.
"""

from dataclasses import replace
from typing import Any

from spark_pipelines.config import PipelineConfig
from spark_pipelines.errors import ConfigError
from spark_pipelines.io.delta import q


def resolve_locations(spark: Any, config: PipelineConfig) -> PipelineConfig:
    """Create the target databases if missing and record where each one stores its tables."""
    target = config.catalog_target
    if target is None or config.locations:
        return config
    locations = []
    for database in config.target_databases():
        namespace = f"{q(target.catalog)}.{q(database)}"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
        described = {row[0]: row[1] for row in spark.sql(f"DESCRIBE NAMESPACE EXTENDED {namespace}").collect()}
        location = described.get("Location")
        if not location:
            raise ConfigError(f"target: catalog database {target.catalog}.{database} has no location; the "
                              "pipeline stores each table under its database's location")
        locations.append((database, str(location)))
    return replace(config, locations=tuple(locations))


def register(spark: Any, name: str, path: str) -> None:
    """Name the Delta table at `path` in the catalog (no-op when the name exists)."""
    location = path.replace("'", "\\'")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION '{location}'")
