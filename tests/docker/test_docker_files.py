"""No Docker engine here: check what can be checked. The compose file parses and names the services the
README promises; every image's entrypoint is a command the test suite runs (its `--help` answers and
accepts the options the entrypoint passes); every COPY source exists; the pipeline config is valid."""

import ast
import itertools
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

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


# --- the docker paragraph, point by point (issue 23) ------------------------------------------------

IMAGES = ("broker", "changefeed", "pipeline")
# Debian releases whose main archive ships openjdk-17-jre-headless (trixie dropped it for 21).
DEBIAN_WITH_JDK17 = ("bookworm",)
_PINNED_PYTHON = re.compile(r"^python:3\.11(\.\d+)?-slim-(?P<release>[a-z]+)(@sha256:[0-9a-f]{64})?$")


def _compose() -> dict[str, Any]:
    # yaml.safe_load resolves `<<` merge keys as docker compose does
    data: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    return data


def _base_image(image: str) -> str:
    instructions = _instructions(DOCKER / f"Dockerfile.{image}")
    args = dict(rest.split("=", 1) for word, rest in instructions if word == "ARG" and "=" in rest)
    (base,) = [rest for word, rest in instructions if word == "FROM"]
    return re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[=<>~ ]", r, maxsplit=1)[0].lower() for r in requirements}


def broker_settings(name: str) -> dict[str, str]:
    """A compose broker's properties: docker/broker.properties, then its command's `--set`s."""
    from broker.config import load_file

    service = _compose()["services"][name]
    assert "/etc/lakefeed/broker.properties" in service["entrypoint"], f"{name} does not read broker.properties"
    settings = load_file(DOCKER / "broker.properties")
    settings.update(v.split("=", 1) for k, v in itertools.pairwise(service["command"]) if k == "--set")
    return settings


def test_compose_changefeed_create_fits_the_brokers_min_insync_replicas() -> None:
    header = (DOCKER / "compose.yaml").read_text().split("services:")[0]
    factor = re.search(r"replication-factor=(\d+)", header)
    assert factor, "the header's `changefeed create` sets no replication-factor"
    for name in ("broker-1", "broker-2", "broker-3"):
        settings = broker_settings(name)
        assert int(factor.group(1)) >= int(settings["min.insync.replicas"]), name
    # and it captures as the least-privilege user, never root
    source = re.search(r"--source \"?mysql://([^:@]+)", header)
    assert source and source.group(1) == "lakefeed_cdc"


@pytest.mark.parametrize("image", IMAGES)
def test_base_images_are_pinned_to_a_debian_release(image: str) -> None:
    match = _PINNED_PYTHON.match(_base_image(image))
    assert match, f"Dockerfile.{image}: base {_base_image(image)!r} floats; name the Debian release"
    if image == "pipeline":
        assert match.group("release") in DEBIAN_WITH_JDK17, "the pipeline image needs openjdk-17-jre-headless"
    for name, service in _compose()["services"].items():
        if "image" in service:
            assert re.match(r"^[\w./-]+:v?\d+\.\d+(\.\d+)?$", service["image"]), f"{name}: {service['image']}"


def test_images_install_only_their_own_extras() -> None:
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    heavy = {"pyspark", "delta-spark", "testcontainers"}
    installs = {image: [rest for word, rest in _instructions(DOCKER / f"Dockerfile.{image}")
                        if word == "RUN" and "pip install" in rest] for image in IMAGES}
    assert installs["broker"] == ["pip install --no-cache-dir ."], installs["broker"]
    assert installs["changefeed"] == ['pip install --no-cache-dir ".[changefeed]"']
    assert installs["pipeline"] == ['pip install --no-cache-dir ".[pipeline]"']
    assert not heavy & _names(project["dependencies"]), "the broker image would install Spark or test tools"
    assert not heavy & _names(extras["changefeed"])
    assert "testcontainers" not in _names(extras["pipeline"])


def _third_party_imports(package: str) -> set[str]:
    modules: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"__future__"}


# import name -> distribution, for the packages the slim images run
_DISTRIBUTION = {"yaml": "pyyaml", "prometheus_client": "prometheus-client", "pymysql": "pymysql",
                 "pymysqlreplication": "mysql-replication", "confluent_kafka": "confluent-kafka",
                 "sqlalchemy": "sqlalchemy"}


@pytest.mark.parametrize(("image", "extra"), [("broker", None), ("changefeed", "changefeed")])
def test_slim_images_have_every_package_their_code_imports(image: str, extra: str | None) -> None:
    project = _pyproject()["project"]
    installed = _names(project["dependencies"]) | (_names(project["optional-dependencies"][extra]) if extra else set())
    copied = {rest.split()[0] for word, rest in _instructions(DOCKER / f"Dockerfile.{image}") if word == "COPY"}
    first_party = {"broker", "changefeed", "sink", "spark_pipelines", "lakefeed_testing", "lakefeed_common"}
    code = [p for p in first_party if p in copied]
    imports = set().union(*(_third_party_imports(p) for p in code))
    assert imports & first_party <= copied, f"{image} image code imports packages it does not COPY"
    missing = {m for m in imports - first_party if _DISTRIBUTION.get(m, m).lower() not in installed}
    assert not missing, f"the {image} image lacks {missing}"


def test_health_checks_gate_dependents_and_everything_restarts() -> None:
    services = _compose()["services"]

    def has_healthcheck(name: str) -> bool:
        service = services[name]
        if "healthcheck" in service:
            return True
        dockerfile = service.get("build", {}).get("dockerfile")
        return bool(dockerfile) and any(w == "HEALTHCHECK" for w, _ in _instructions(ROOT / dockerfile))

    for name in ("mysql", "broker-1", "broker-2", "broker-3", "changefeed"):
        assert has_healthcheck(name), name
    def one_shot(name: str) -> bool:  # a job (pki, setup): runs once, others wait for it to finish well
        return services[name].get("restart") == "no"

    def dependencies(name: str) -> set[str]:
        found = set(services[name].get("depends_on", {}))
        return found.union(*(dependencies(d) for d in found))

    for name in ("changefeed", "pipeline", "setup", "broker-1", "broker-2", "broker-3"):
        depends = services[name]["depends_on"]
        assert isinstance(depends, dict), f"{name}: depends_on without conditions starts before its dependencies"
        for dependency, rule in depends.items():
            if one_shot(dependency):
                assert rule == {"condition": "service_completed_successfully"}, (name, dependency)
            else:
                assert rule == {"condition": "service_healthy"} and has_healthcheck(dependency), (name, dependency)
    assert {"mysql", "broker-1", "broker-2", "broker-3", "setup", "pki"} <= dependencies("changefeed")
    assert {"setup", "pki"} <= dependencies("pipeline")
    for name, service in services.items():
        if not one_shot(name):
            assert service.get("restart") in ("unless-stopped", "always", "on-failure"), name


def test_pipeline_jar_cache_is_a_volume() -> None:
    instructions = _instructions(DOCKER / "Dockerfile.pipeline")
    env = dict(rest.split("=", 1) for word, rest in instructions if word == "ENV")
    cache = env["LAKEFEED_CACHE"]  # spark_pipelines.packages: the Ivy cache and jars live there
    compose = _compose()
    mounts = {m.split(":")[1]: m.split(":")[0] for m in compose["services"]["pipeline"]["volumes"]}
    assert cache in mounts and mounts[cache] in compose["volumes"], "no named volume for the jar cache"


def test_cdc_user_is_least_privilege_and_created_by_an_init_script() -> None:
    mysql = _compose()["services"]["mysql"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in mysql["volumes"]}
    init = DOCKER / mounts["/docker-entrypoint-initdb.d"]
    script = "\n".join(p.read_text() for p in sorted(init.iterdir()))
    grants = {g.strip() for line in re.findall(r"GRANT (.+?) ON", script) for g in line.split(",")}
    # docs/runbooks/use-your-own-mysql.md, "The capture user", MySQL 8.4
    assert grants == {"REPLICATION SLAVE", "REPLICATION CLIENT", "SELECT", "RELOAD"}, grants
    assert "ALL PRIVILEGES" not in script and "SUPER" not in script
    assert "GRANT SELECT ON shop.*" in script, "SELECT only on the captured database"
    assert "LAKEFEED_CDC_PASSWORD" in mysql["environment"]


@pytest.mark.parametrize("image", IMAGES)
def test_images_run_as_a_non_root_user(image: str) -> None:
    instructions = _instructions(DOCKER / f"Dockerfile.{image}")
    words = [w for w, _ in instructions]
    users = [rest for word, rest in instructions if word == "USER"]
    assert users and users[-1] not in ("root", "0"), f"Dockerfile.{image} runs as root"
    assert words.index("USER") < words.index("ENTRYPOINT")
    created = " ".join(rest for word, rest in instructions if word == "RUN" and "useradd" in rest)
    assert users[-1] in created and "chown" in created, "the user and its data directories are created"


def test_monitoring_profile_uses_the_shipped_ops_files() -> None:
    services = _compose()["services"]
    prometheus = services["prometheus"]
    config_dir = (DOCKER / prometheus["volumes"][0].split(":")[0]).resolve()
    config = yaml.safe_load((config_dir / "prometheus.yml").read_text())
    assert (config_dir / config["rule_files"][0]).exists()
    targets = {t for job in config["scrape_configs"] for c in job["static_configs"] for t in c["targets"]}
    broker_entry = json.loads(next(r for w, r in _instructions(DOCKER / "Dockerfile.broker") if w == "ENTRYPOINT"))
    metrics_port = broker_entry[broker_entry.index("--metrics-port") + 1]
    assert {f"broker-{n}:{metrics_port}" for n in (1, 2, 3)} | {"changefeed:8300"} <= targets
