"""Pipeline YAML: good configs load; every error names the key path, the bad value and what is allowed."""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from spark_pipelines.config import Maintenance, load_config, parse_config
from spark_pipelines.errors import ConfigError

GOOD = {
    "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["cdc"]},
    "target": {"path": "/data/delta"},
    "checkpoint": "/data/ckpt",
}


def test_defaults_and_table_paths() -> None:
    config = parse_config(GOOD)
    assert config.available_now and config.source.starting_offsets == "earliest"
    assert config.table_path("shop", "orders") == "/data/delta/shop/orders"
    timed = parse_config({**GOOD, "trigger": {"processing_time": "5 seconds"}})
    assert not timed.available_now and timed.processing_time == "5 seconds"


def test_tables_and_maintenance() -> None:
    config = parse_config({
        **GOOD,
        "tables": {"include": ["shop.*", "crm.users"], "exclude": ["shop.tmp_*"],
                   "rename": {"shop.acct": "finance.accounts"}},
        "target": {"path": "/data/delta/", "on_drop_table": "ignore", "on_rename_table": "ignore"},
        "maintenance": {"optimize_every_batches": 3, "vacuum_retain_hours": 200, "change_data_feed": True},
    })
    rules = config.tables
    kept = [name for name in ("shop.orders", "shop.tmp_1", "crm.users", "crm.leads", "Shop.orders")
            if rules.keeps(*name.split("."))]
    assert kept == ["shop.orders", "crm.users"]
    assert config.table_path("shop", "acct") == "/data/delta/finance/accounts"
    assert config.table_path("shop", "orders") == "/data/delta/shop/orders"
    assert (config.on_drop_table, config.on_rename_table) == ("ignore", "ignore")
    maintenance = config.maintenance
    assert maintenance.change_data_feed and maintenance.vacuum_retain_hours == 200
    assert [b for b in range(7) if maintenance.due(b)] == [2, 5]
    assert not parse_config(GOOD).maintenance.due(0)
    # A merge of the change buffer applies several batches: due when one of them is due on its own.
    for every in (1, 2, 3, 7):
        cadence = Maintenance(optimize_every_batches=every)
        for first in range(30):
            for last in range(first, 30):
                expected = any(cadence.due(b) for b in range(first, last + 1))
                assert cadence.due(first, last) == expected, (every, first, last)
    assert not Maintenance().due(0, 100)
    assert parse_config(GOOD).tables.keeps("any", "table")


def test_catalog_target_names_and_locations() -> None:
    config = parse_config({**GOOD, "target": {"database": "lake"}, "tables": {"rename": {"shop.acct": "crm.accounts"}}})
    assert config.target_path is None and config.target_databases() == ["crm", "lake"]
    assert config.catalog_name("shop", "orders") == "`spark_catalog`.`lake`.`orders`"
    assert config.catalog_name("shop", "acct") == "`spark_catalog`.`crm`.`accounts`"
    with pytest.raises(ConfigError, match="has not been looked up yet"):
        config.table_path("shop", "orders")
    located = replace(config, locations=(("crm", "s3://b/crm.db"), ("lake", "file:/w/lake.db/")))
    assert located.table_path("other", "orders") == "file:/w/lake.db/orders"
    assert located.table_path("shop", "acct") == "s3://b/crm.db/accounts"
    named = parse_config({**GOOD, "target": {"catalog": "main", "database": "x`y"}})
    assert named.catalog_name("shop", "t") == "`main`.`x``y`.`t`"
    assert parse_config(GOOD).catalog_name("shop", "t") is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": {"bootstrap_servers": "h:1"}}, "set exactly one of topics"),
        ({"source": {**GOOD["source"], "starting_offsets": "middle"}}, "source.starting_offsets: 'middle'"),
        ({"source": {**GOOD["source"], "topics": "cdc"}}, "source.topics: expected a list"),
        ({"target": {"path": "/x", "paht": "/x"}}, "target.paht: unknown key; allowed here: catalog, database"),
        ({"target": {"scd_type": 1}}, "target: set exactly one of path"),
        ({"target": {"path": "/x", "database": "lake"}}, "target: set exactly one of path"),
        ({"target": {"path": "/x", "catalog": "c"}}, "target.catalog: needs target.database"),
        ({"target": {"database": ""}}, "target.database: expected a non-empty string"),
        ({"target": "/x"}, "target: expected a mapping, got '/x'"),
        ({"checkpoint": ""}, "checkpoint: expected a non-empty string"),
        ({"trigger": {"available_now": True, "processing_time": "1 second"}}, "trigger: set exactly one"),
        ({"extra": 1}, "extra: unknown key"),
        ({"target": {"path": "/x", "scd_type": 3}}, "target.scd_type: 3 is not one of 1, 2"),
        ({"source": {**GOOD["source"], "max_offsets_per_trigger": 0}}, "source.max_offsets_per_trigger: expected"),
        ({"target": {"path": "/x", "on_drop_table": "drop"}}, "target.on_drop_table: 'drop' is not one of tombstone"),
        ({"target": {"path": "/x", "on_rename_table": 1}}, "target.on_rename_table: 1 is not one of follow, ignore"),
        ({"tables": {"include": "shop.*"}}, "tables.include: expected a list of 'database.table' glob patterns"),
        ({"tables": {"exclude": ["orders"]}}, "tables.exclude: expected a list of 'database.table'"),
        ({"tables": {"rename": {"shop.a": "b"}}}, "tables.rename.shop.a: 'b' is not a plain 'database.table'"),
        ({"tables": {"rename": {"shop.a": "x.y", "shop.b": "x.y"}}}, "two tables are renamed to 'x.y'"),
        ({"tables": {"only": []}}, "tables.only: unknown key; allowed here: exclude, include, rename"),
        ({"maintenance": {"optimize_every_batches": -1}}, "maintenance.optimize_every_batches: expected a whole"),
        ({"maintenance": {"vacuum_retain_hours": 168}}, "optimize_every_batches: 0 never runs maintenance"),
        ({"maintenance": {"optimize_every_batches": 1, "vacuum_retain_hours": 1}},
         "maintenance.vacuum_retain_hours: expected a whole number >= 168, got 1"),
        ({"maintenance": {"change_data_feed": "yes"}}, "maintenance.change_data_feed: 'yes' is not one of False"),
    ],
)
def test_bad_configs_name_the_key(change: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({**GOOD, **change})
    assert message in str(info.value)


def test_bad_yaml_and_cli_exit_code(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_config(bad)
    result = subprocess.run(
        [sys.executable, "-m", "spark_pipelines.cli", "run", "--config", str(bad)],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "is not valid YAML" in result.stderr
