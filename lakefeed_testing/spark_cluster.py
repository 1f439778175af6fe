"""A Spark standalone cluster on 127.0.0.1: one master and one worker started from the pyspark wheel
with `spark-class` (the wheel ships no sbin/start-master.sh), and `spark-submit` against it.

Small on purpose (1 core, 1 GiB executor): it proves the job runs as a cluster application (driver,
a separate executor JVM, jars shipped by the driver), not how fast a cluster is.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.spark import spark_submit_args

STOP_TIMEOUT = 20.0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:<port>
    ui_port: int
    work_dir: Path

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
                state = json.load(response)
        except (OSError, ValueError):  # the UI answers 404 until its pages are attached
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


def cluster_env(work_dir: Path) -> dict[str, str]:
    """Loopback only, logs and executor directories under `work_dir` (never inside the wheel), and the
    same Python for the driver and the executors."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(work_dir / "worker"),
        "SPARK_LOCAL_DIRS": str(work_dir / "local"),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    })
    return env


def _start(args: Sequence[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        # Own process group: stopping it also stops the JVM that spark-class execs into.
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT)


@contextlib.contextmanager
def standalone_cluster(worker_memory: str = "1536m", cores: int = 1) -> Iterator[StandaloneCluster]:
    """Start a master and one worker, wait until the worker has registered, stop both on exit."""
    work_dir = Path(tempfile.mkdtemp(prefix="lakefeed-spark-cluster-"))
    env = cluster_env(work_dir)
    port, ui_port = free_port(), free_port()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", str(ui_port)], env, work_dir / "master.log")
        processes.append(master)
        wait_until(lambda: port_open(port), timeout=60, what="Spark master", alive=lambda: master.poll() is None)
        cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", ui_port, work_dir)
        worker = _start(["org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", "127.0.0.1",
                         "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
                         "--memory", worker_memory], env, work_dir / "worker.log")
        processes.append(worker)
        wait_until(lambda: port_open(ui_port) and cluster.alive_workers() == 1, timeout=60,
                   what="Spark worker registration", alive=lambda: worker.poll() is None)
        yield cluster
    except ServiceError as exc:
        logs = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
                         for log in sorted(work_dir.glob("*.log")))
        raise ServiceError(f"{exc}\n{logs}") from exc
    finally:
        for process in reversed(processes):
            _stop(process)
        shutil.rmtree(work_dir, ignore_errors=True)


def spark_submit(cluster: StandaloneCluster, app: Sequence[str], *, conf: dict[str, str] | None = None,
                 env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `spark-submit --master <cluster> [packages and conf] <app...>` in client mode and wait."""
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url,
               "--deploy-mode", "client", "--driver-memory", "1g", "--executor-memory", "1g",
               "--total-executor-cores", "1", *spark_submit_args(conf), *app]
    merged = {**cluster_env(cluster.work_dir), **(env or {})}
    with subprocess.Popen(command, env=merged, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise ServiceError(f"spark-submit did not finish in {timeout:.0f} s:\n{stderr[-5000:]}") from None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
