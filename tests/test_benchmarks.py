"""The benchmark commands of docs/benchmarks.md run (with small numbers: they measure, CI only checks they
work and print their tables); every bench script parses its options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "bench"


def _run(script: str, *args: str, timeout: float = 300) -> str:
    result = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                            timeout=timeout, check=False, cwd=BENCH.parent)
    assert result.returncode == 0, f"{script} {' '.join(args)}: exit {result.returncode}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")))
def test_every_benchmark_parses_its_options(script: str) -> None:
    assert "--help" in _run(script, "--help", timeout=60)


@pytest.mark.integration  # a private MariaDB and our broker
def test_changefeed_benchmark_runs() -> None:
    out = _run("changefeed.py", "--rows", "500", "--live-seconds", "1", "--live-rate", "200")
    assert "end to end (-> bundled broker, acked)" in out and "commit -> acknowledged checkpoint" in out
