"""The client commands of `changefeed` do not import the server (uvicorn, FastAPI, SQLAlchemy, capture): each
invocation of `changefeed list/create/...` started in about a second, nearly all of it those imports."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from changefeed.cli import main

SERVER_MODULES = ("changefeed.server_cli", "uvicorn", "fastapi", "sqlalchemy", "changefeed.source.capture")
PROBE = f"""
import sys
from changefeed.cli import main
try:
    main(["list", "--server", "http://127.0.0.1:9"])
except SystemExit as exit:
    print(exit.code)
print(sorted(m for m in {SERVER_MODULES!r} if m in sys.modules))
"""


def test_a_client_command_runs_without_importing_the_server() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == ["5", "[]"], (result.stdout, result.stderr)  # 5: server unreachable
    assert "cannot reach the changefeed server at http://127.0.0.1:9" in result.stderr, result.stderr


def test_the_server_command_is_listed_and_loads_when_asked_for() -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["--help"])
    assert listed.exit_code == 0 and "server " in listed.output and "create " in listed.output
    server_help = runner.invoke(main, ["server", "--help"])
    assert server_help.exit_code == 0, server_help.output
    assert "--listen" in server_help.output
    unknown = runner.invoke(main, ["serve"])
    assert unknown.exit_code == 2 and "No such command 'serve'" in unknown.output
