"""README and docs stay true: every relative link resolves, every command is run (here when cheap, else by
the test named in COMMAND_TESTS), every YAML example loads, and the configuration reference lists
every option the code accepts."""

from __future__ import annotations

import ast
import contextlib
import functools
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from broker.cli import main as broker_cli
from changefeed.cli import main as changefeed_cli
from changefeed.config import load_config as load_changefeed_config
from lakefeed_testing.net import free_port, port_open, wait_until
from spark_pipelines.cli import main as pipeline_cli
from spark_pipelines.config import parse_config as parse_pipeline_config
from tests import config_options

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "bench" / "README.md",
         ROOT / "examples" / "README.md"]
_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PROGRAMS = ("bash", "changefeed", "broker", "spark-pipeline", "kafka-configs", "kafka-topics", ".venv/bin/python",
            "python", "spark-submit", "docker", "kafka-leader-election", "spark-pipelines", "export", "curl",
            '"$SPARK_HOME/bin/spark-class"', '"$SPARK_HOME/bin/spark-submit"')
CLIS = {"changefeed": changefeed_cli, "broker": broker_cli, "spark-pipeline": pipeline_cli}
CLIENT_VERBS = ("list", "query", "statistics", "pause", "resume", "update", "remove")

_SUBMIT_TEST = "tests/spark_pipelines/test_spark_submit.py::test_spark_submit_runs_the_pipeline_on_a_standalone_cluster"
# Commands a test here cannot run cheaply -> the test that runs them (by prefix; the longest prefix wins).
COMMAND_TESTS = {
    "bash scripts/demo.sh": "tests/examples/test_quickstart.py::test_main_job_makes_delta_equal_to_mysql",
    "bash scripts/test.sh": ".ci/run",
    "changefeed server": "tests/changefeed/lifecycle/test_cli_lifecycle.py::test_lifecycle_through_the_cli",
    "changefeed create": "tests/changefeed/lifecycle/test_cli_lifecycle.py::test_lifecycle_through_the_cli",
    "changefeed create --changefeed-id shop --source 'mysql://cdc:secret@127.0.0.1:3306":
        "tests/examples/test_example_changefeeds.py::test_dispatch_and_filter_examples",
    "python examples/workload.py": "tests/examples/test_workload.py::test_fixed_load_then_changes",
    "changefeed update": "tests/changefeed/lifecycle/test_failed_and_finished.py::test_failed_then_updated_and_resumed",
    "changefeed": "tests/changefeed/lifecycle/test_cli_lifecycle.py::test_lifecycle_through_the_cli",
    "broker start --config examples/brokers/single-node.properties":
        "tests/examples/test_example_configs.py::test_single_node_config_runs_a_broker",
    # The standalone-cluster walk-through: lakefeed_testing/spark_cluster.py does the same steps (the
    # environment, master, worker, the token-provider jar) and the test submits the job the same way.
    "export SPARK_": _SUBMIT_TEST,
    '"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy': _SUBMIT_TEST,
    '"$SPARK_HOME/bin/spark-submit" --master spark://': _SUBMIT_TEST,
    "curl -fLO https://repo1.maven.org/maven2/org/apache/spark/spark-token-provider-kafka": _SUBMIT_TEST,
    "spark-pipelines --conf": "tests/spark_pipelines/test_declarative_pipelines.py::"
                              "test_auto_cdc_flow_cannot_target_delta_while_append_flows_can",
    "spark-pipeline verify": "tests/equality/test_verify.py::"
                             "test_verify_exits_0_on_an_equal_table_and_names_exactly_the_damaged_keys",
    "broker dev-cluster": "tests/broker/test_dev_cluster.py::test_sigterm_to_the_foreground_manager_stops_every_node",
    "kafka-leader-election": "tests/broker/cluster/test_clients.py::"
                             "test_kafka_leader_election_moves_leadership_back_to_the_preferred_replica",
    "broker dump-log-segments": "tests/broker/storage/test_dump_cli.py::test_dump_reports_trailing_garbage_and_rejects_"
                                "unknown_files",
    "kafka-configs --bootstrap-server 127.0.0.1:9092 --describe --entity-type brokers":
        "tests/examples/test_example_configs.py::test_single_node_config_runs_a_broker",
    ".venv/bin/python bench/changefeed.py": "tests/test_benchmarks.py::test_changefeed_benchmark_runs",
    ".venv/bin/python bench/verify.py": "tests/test_benchmarks.py::"
                                        "test_verify_benchmark_answers_right_on_a_small_table",
    ".venv/bin/python bench/": "tests/test_benchmarks.py::test_every_benchmark_parses_its_options",
}
# Commands no test runs in full, and why; their options are still checked (`--help`).
_BENCH = "a benchmark: it measures for minutes; tests/test_benchmarks.py runs its --help (and changefeed.py small)"
HELP_ONLY = {
    ".venv/bin/python bench/broker.py": "measures our broker against Apache Kafka: about 50 s even with small "
                                        "numbers; " + _BENCH,
    ".venv/bin/python bench/capture.py": _BENCH,
    "PYTHONPATH=. .venv/bin/python bench/storage.py": _BENCH,
    ".venv/bin/python bench/pipeline.py": _BENCH,
    "PYTHONPATH=. .venv/bin/python bench/restart.py": "builds a data dir of 1,000 partitions x 10 segments first; "
                                                      + _BENCH,
}


def _blocks(page: Path) -> Iterator[tuple[str, str]]:
    for _, lang, body in _FENCE.findall(page.read_text(encoding="utf-8")):
        yield lang, body


def _command_lines(text: str) -> list[str]:
    text = re.sub(r"\\\n\s*", " ", text)
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines()]
    return [line.removeprefix("$ ") for line in lines if line and not line.startswith("#")]


def _program(line: str) -> str:
    """The program a command line runs, after leading VAR=value assignments."""
    words = [w for w in line.split() if not re.match(r"^[A-Z_]+=\S*$", w)]
    return words[0] if words else ""


def _commands() -> list[tuple[str, str]]:
    """(page, command) for every command line of a fenced block (bash/sh blocks, and unlabelled blocks
    whose first word is a program; the others are diagrams) and of an indented code block."""
    found = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        for lang, body in _blocks(page):
            lines = _command_lines(body)
            if lang in ("bash", "sh", "shell", "console") or (not lang and lines and _program(lines[0]) in PROGRAMS):
                found += [(name, line) for line in lines]
        previous = ""
        for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
            if line.startswith("    ") and (not previous.strip() or previous.startswith("    ")):
                found += [(name, c) for c in _command_lines(line) if _program(c) in PROGRAMS]
            previous = line
    return found


COMMANDS = _commands()


def _test_for(command: str) -> str | None:
    prefixes = [p for p in COMMAND_TESTS if command.startswith(p)]
    return COMMAND_TESTS[max(prefixes, key=len)] if prefixes else None


def test_commands_were_found() -> None:
    commands = {command for _, command in COMMANDS}
    assert "bash scripts/demo.sh" in commands and any(c.startswith("changefeed create") for c in commands)


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}:{c[:50]}" for p, c in COMMANDS])
def test_every_command_is_run_by_a_test(page: str, command: str) -> None:
    assert _program(command) in PROGRAMS, f"{page}: {command!r} is not a command this test knows"
    if any(command.startswith(prefix) for prefix in HELP_ONLY):
        return
    target = _test_for(command)
    assert target, f"{page}: {command!r} is run by no test; add it to COMMAND_TESTS or run it here"
    path, _, name = target.partition("::")
    assert (ROOT / path).is_file(), f"{target} does not exist"
    if name:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        assert name in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}, f"{target} is gone"
    else:  # a script that runs it: it must contain the command
        assert command in (ROOT / path).read_text(encoding="utf-8")


@functools.cache
def _help(program: str, verb: str) -> str:
    result = CliRunner().invoke(CLIS[program], [verb, "--help"])  # the real command, in this process
    assert result.exit_code == 0, f"{program} {verb} --help: {result.output}"
    return result.output


@pytest.mark.parametrize("command", sorted({c for _, c in COMMANDS if c.split()[0] in CLIS}))
def test_documented_options_exist(command: str) -> None:
    """Runs `PROGRAM VERB --help` and finds every option the documented command uses."""
    program, verb, *rest = command.split(maxsplit=2)
    text = _help(program, verb)
    for option in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", " ".join(rest)):
        assert re.search(rf"(?<![\w-]){re.escape(option)}\b", text), f"{command}: {option} is not in --help"


@pytest.fixture(scope="module")
def changefeed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    data = tmp_path_factory.mktemp("server")
    with (data / "server.log").open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "changefeed.cli", "server", "--data-dir", str(data),
                                    "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=30, what="changefeed server", alive=lambda: process.poll() is None)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)


RUNNABLE = sorted({c for _, c in COMMANDS if c.split()[:1] == ["changefeed"] and c.split()[1] in CLIENT_VERBS
                   and not re.search(r"[\[\]|]|\.\.\.", c)})


@pytest.mark.integration  # a changefeed server process
@pytest.mark.parametrize("command", RUNNABLE)
def test_client_commands_run_against_a_server(command: str, changefeed_server: str) -> None:
    """The documented client commands, literally, against a real server that has no changefeeds: `list`
    answers, the others answer "no such changefeed" (exit 3) after parsing every argument."""
    args = shlex.split(command)[1:]
    with contextlib.chdir(ROOT):  # relative paths in commands are relative to the repository
        result = CliRunner().invoke(changefeed_cli, [*args, "--server", changefeed_server])
    expected = 0 if args[0] == "list" else 3
    assert result.exit_code == expected, f"{command}: exit {result.exit_code}: {result.output}"
    if expected == 3:
        assert "does not exist" in result.output


def test_relative_links_resolve() -> None:
    broken = []
    for page in PAGES:
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in _LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_yaml_examples_in_docs_load() -> None:
    loaded = 0
    for page in PAGES:
        for lang, body in _blocks(page):
            if lang != "yaml":
                continue
            data = yaml.safe_load(body)
            if "source" in data:
                parse_pipeline_config(data)
            else:
                load_changefeed_config(body)
            loaded += 1
    assert loaded >= 2


def _reference() -> str:
    return (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", ["broker_properties", "topic_configs", "sink_uri_parameters",
                                  "changefeed_yaml_keys", "pipeline_yaml_keys"])
def test_configuration_reference_lists_every_option(kind: str) -> None:
    names = getattr(config_options, kind)()
    if kind == "broker_properties":
        names |= config_options.PENDING_CLUSTER_PROPERTIES
    missing = sorted(name for name in names if f"`{name}`" not in _reference())
    assert not missing, f"docs/configuration.md lacks these {kind}: {missing}"


def test_configuration_reference_lists_every_cli_option() -> None:
    text = _reference()
    sections = {m.group(1): m.group(2) for m in re.finditer(r"^### `([^`]+)`[^\n]*\n(.*?)(?=^##|\Z)", text,
                                                            re.MULTILINE | re.DOTALL)}
    missing = []
    for command, options in config_options.cli_options().items():
        section = sections.get(command) or (sections["changefeed"] if command.startswith("changefeed ") else "")
        missing += [f"{command} {o}" for o in sorted(options) if f"`{o}" not in section]
    assert not missing, f"docs/configuration.md lacks: {missing}"
