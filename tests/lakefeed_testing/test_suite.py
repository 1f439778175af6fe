"""The two-stream runner of the whole suite (lakefeed_testing/suite.py): its exit code and output, run on small
throwaway test files (pytest in subprocesses, as `scripts/test.sh` runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakefeed_testing.suite import STREAMS, parse_reference_env, reference_env, run_streams


def _write(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


def test_the_run_fails_when_one_stream_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Without our conftest both streams run the same file; the failing test names its stream in the output.
    tests = _write(tmp_path / "test_one.py", (
        "import os\n"
        "def test_passes():\n    pass\n"
        "def test_fails_in_rest():\n    assert os.environ['LAKEFEED_TEST_STREAM'] != 'rest'\n"
    ))
    code = run_streams(["-q", "-p", "no:cacheprovider", str(tests)], tmp_path / "temp")
    out = capsys.readouterr().out
    assert code == 1
    assert "== stream broker: exit 0: 2 passed" in out
    assert "== stream rest: exit 1: 1 failed, 1 passed" in out
    assert all(f"[{name}] " in out for name in STREAMS), out


def test_the_run_passes_when_both_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tests = _write(tmp_path / "test_two.py", "def test_passes():\n    pass\n")
    assert run_streams(["-q", "-p", "no:cacheprovider", str(tests)], tmp_path / "temp") == 0
    assert capsys.readouterr().out.count("exit 0: 1 passed") == 2


def test_a_stream_with_nothing_selected_is_not_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tests = _write(tmp_path / "test_three.py", "def test_passes():\n    pass\n")
    code = run_streams(["-q", "-p", "no:cacheprovider", str(tests), "-k", "no_such_test"], tmp_path / "temp")
    out = capsys.readouterr().out
    assert code == 5, out  # pytest's "no tests ran" for the whole run, as one pytest says it
    assert out.count("exit 5: 1 deselected") == 2, out


def test_the_shared_reference_is_named_by_port_and_data_dir(tmp_path: Path) -> None:
    from lakefeed_testing.kafka_reference import KafkaReference

    reference = KafkaReference(port=9092, data_dir=tmp_path / "logs")
    assert parse_reference_env(reference_env(reference)) == reference
    with pytest.raises(ValueError, match="expected '<port>:<data dir>'"):
        parse_reference_env("localhost")
