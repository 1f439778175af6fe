"""The OpenAPI spec of a real `changefeed server` process, tested with schemathesis: no 5xx, and every
response (status code, content type, body) matches the spec."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from changefeed.lifecycle.store import MetadataStore
from changefeed.model import Checkpoint, Position
from lakefeed_testing.net import free_port, port_open, wait_until


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("api")
    url = f"sqlite:///{root / 'metadata.db'}"
    store = MetadataStore(url)
    # A stopped changefeed (nothing runs: no services needed) so per-changefeed routes have one to hit.
    store.create("cf1", "mysql://u:p@127.0.0.1:1", "kafka://127.0.0.1:1/t", "", Checkpoint(Position("b.1", 4), 1),
                 None)
    store.operator_set("cf1", restart=False, state="stopped")
    store.close()
    port = free_port()
    with (root / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(root), "--metadata-url", url,
             "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=30, what="changefeed server",
                   alive=lambda: process.poll() is None)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)
    assert "Traceback" not in (root / "server.log").read_text(), (root / "server.log").read_text()[-3000:]


CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.mark.integration
def test_api_matches_its_spec(api_url: str, tmp_path: Path) -> None:
    # The schemathesis CLI (its pytest plugin does not load under pytest 9): every operation, with
    # generated valid and invalid inputs; a failing check makes the run exit non-zero.
    result = subprocess.run(
        [str(Path(sys.executable).parent / "schemathesis"), "run", f"{api_url}/api/v2/openapi.json",
         "--checks", CHECKS, "--max-examples", "30", "--seed", "1", "--phases", "examples,coverage,fuzzing",
         "--report", "junit", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,  # its cache dir lands there
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "Fuzzing" in result.stdout and "11 passed" in result.stdout, result.stdout
