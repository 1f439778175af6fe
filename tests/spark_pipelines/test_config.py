"""Pipeline YAML: good configs load; every error names the key path, the bad value and what is allowed."""

import subprocess
import sys
from pathlib import Path

import pytest

from spark_pipelines.config import load_config, parse_config
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


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": {"bootstrap_servers": "h:1"}}, "set exactly one of topics"),
        ({"source": {**GOOD["source"], "starting_offsets": "middle"}}, "source.starting_offsets: 'middle'"),
        ({"source": {**GOOD["source"], "topics": "cdc"}}, "source.topics: expected a list"),
        ({"target": {"paht": "/x"}}, "target.paht: unknown key; allowed here: path"),
        ({"target": "/x"}, "target: expected a mapping, got '/x'"),
        ({"checkpoint": ""}, "checkpoint: expected a non-empty string"),
        ({"trigger": {"available_now": True, "processing_time": "1 second"}}, "trigger: set exactly one"),
        ({"extra": 1}, "extra: unknown key"),
        ({"target": {"path": "/x", "scd_type": 3}}, "target.scd_type: 3 is not one of 1, 2"),
        ({"source": {**GOOD["source"], "max_offsets_per_trigger": 0}}, "source.max_offsets_per_trigger: expected"),
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
