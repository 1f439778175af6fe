"""The distribution's packages import and its console scripts answer --help."""

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ["changefeed", "sink", "broker", "spark_pipelines", "lakefeed_common"]
SCRIPTS = {"changefeed": "changefeed", "broker": "broker", "spark-pipeline": "spark_pipelines"}


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports(package: str) -> None:
    assert importlib.import_module(package).__doc__


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_console_script_help(script: str) -> None:
    executable = Path(sys.executable).with_name(script)
    path = str(executable) if executable.exists() else shutil.which(script)
    assert path, f"console script {script} is not installed; run scripts/setup.sh"
    result = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert f"Usage: {script}" in result.stdout


def test_unknown_subcommand_fails_with_usage_error() -> None:
    executable = Path(sys.executable).with_name("broker")
    result = subprocess.run([str(executable), "no-such-command"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "No such command" in result.stderr
