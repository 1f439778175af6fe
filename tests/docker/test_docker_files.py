"""No Docker engine here: check what can be checked. The compose file parses and names the services the
README promises; every image's entrypoint is a command the test suite runs (its `--help` answers and
accepts the options the entrypoint passes); every COPY source exists; the pipeline config is valid."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spark_pipelines.config import load_config

DOCKER = Path(__file__).parents[2] / "docker"
ROOT = DOCKER.parent


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    lines, pending = [], ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending += line.rstrip("\\") + " "
        if not line.endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            lines.append((word.upper(), rest))
            pending = ""
    return lines


def test_compose_services_and_builds() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    assert {"mysql", "broker-1", "broker-2", "broker-3", "changefeed", "pipeline"} <= set(services)
    assert "--binlog-format=ROW" in services["mysql"]["command"]
    for name, service in services.items():
        if "build" in service:
            assert (ROOT / service["build"]["dockerfile"]).exists(), name


@pytest.mark.parametrize("image", ["broker", "changefeed", "pipeline"])
def test_entrypoint_is_a_real_command(image: str) -> None:
    instructions = _instructions(DOCKER / f"Dockerfile.{image}")
    for word, rest in instructions:
        if word == "COPY":
            source = rest.split()[0]
            assert (ROOT / source).exists(), f"COPY {source}"
    entrypoints = [json.loads(rest) for word, rest in instructions if word == "ENTRYPOINT"]
    assert len(entrypoints) == 1
    program, *args = entrypoints[0]
    script = Path(sys.executable).with_name(program)
    # The subcommand's --help must answer, and must know every option the entrypoint passes.
    subcommand = [a for a in args if not a.startswith("-")][:1]
    result = subprocess.run([str(script), *subcommand, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for option in (a for a in args if a.startswith("--")):
        assert option in result.stdout, f"{program} {subcommand} has no {option}"


def test_pipeline_config_in_compose_is_valid() -> None:
    config = load_config(DOCKER / "pipeline.yaml")
    assert config.source.topic_pattern == "shop.*" and not config.available_now
