"""Every option the code accepts, read from the code itself so the documentation cannot drift from it.

The YAML loaders list what is allowed in their "unknown key" errors: asking them with a key that does
not exist gives the real list at each level, without a second copy here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from broker.cli import main as broker_cli
from broker.config_catalog import BROKER_CONFIGS, TOPIC_CONFIGS
from changefeed.cli import main as changefeed_cli
from changefeed.config import parse_config as parse_changefeed_config
from changefeed.errors import ConfigError as ChangefeedConfigError
from sink.uri import PARAMETERS
from spark_pipelines.cli import main as pipeline_cli
from spark_pipelines.config import parse_config as parse_pipeline_config
from spark_pipelines.errors import ConfigError as PipelineConfigError

# Broker properties of the cluster (issue 5): the example configs and the reference carry them before
# broker/config.py knows them. Remove a name here once the broker reads it.
PENDING_CLUSTER_PROPERTIES: frozenset[str] = frozenset()  # every cluster property is in DEFAULTS now

_ALLOWED = re.compile(r"allowed here: (.*)$")


def _allowed(parse: Callable[[Any], object], document: Any, error: type[Exception]) -> set[str]:
    try:
        parse(document)
    except error as exc:
        match = _ALLOWED.search(str(exc))
        assert match, f"{document}: the error does not list the allowed keys: {exc}"
        return {key.strip() for key in match.group(1).split(",")}
    raise AssertionError(f"{document} was accepted; the probe key must be unknown")


def broker_properties() -> set[str]:
    """Broker properties the broker reads or reports (DescribeConfigs on the broker resource)."""
    return set(BROKER_CONFIGS)


def topic_configs() -> set[str]:
    return set(TOPIC_CONFIGS)


def sink_uri_parameters() -> set[str]:
    return set(PARAMETERS)


def changefeed_yaml_keys() -> set[str]:
    """Dotted key paths of the changefeed YAML config (lists shown as `[]`)."""
    probe = "zz-no-such-key"
    levels = {
        "": {probe: 1},
        "filter.": {"filter": {probe: 1}},
        "filter.event-filters[].": {"filter": {"event-filters": [{probe: 1}]}},
        "sink.": {"sink": {probe: 1}},
        "sink.dispatchers[].": {"sink": {"dispatchers": [{probe: 1}]}},
    }
    return {prefix + key for prefix, doc in levels.items()
            for key in _allowed(parse_changefeed_config, doc, ChangefeedConfigError)}


def pipeline_yaml_keys() -> set[str]:
    """Dotted key paths of the pipeline YAML config."""
    probe = "zz_no_such_key"
    base = {"source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["t"]}, "target": {"path": "/d"},
            "checkpoint": "/c"}
    levels = {
        "": {probe: 1},
        "source.": {"source": {probe: 1}},
        "target.": {**base, "target": {"path": "/d", probe: 1}},
        "trigger.": {**base, "trigger": {probe: 1}},
        "tables.": {**base, "tables": {probe: 1}},
        "maintenance.": {**base, "maintenance": {probe: 1}},
        "spark.": {**base, "spark": {probe: 1}},
    }
    return {prefix + key for prefix, doc in levels.items()
            for key in _allowed(parse_pipeline_config, doc, PipelineConfigError)}


def cli_options() -> dict[str, set[str]]:
    """`command subcommand` -> its long options, for every command of the three console scripts."""
    result: dict[str, set[str]] = {}
    for name, group in (("broker", broker_cli), ("changefeed", changefeed_cli), ("spark-pipeline", pipeline_cli)):
        assert isinstance(group, click.Group)
        ctx = click.Context(group)
        for sub_name in group.list_commands(ctx):  # click's API, which loads lazily loaded subcommands too
            command = group.get_command(ctx, sub_name)
            assert command is not None
            options = {opt for param in command.params if isinstance(param, click.Option)
                       for opt in param.opts if opt.startswith("--") and opt != "--help"}
            result[f"{name} {sub_name}"] = options
    return result
