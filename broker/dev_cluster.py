"""A local development cluster: N `broker start` processes on consecutive ports, one data dir each.

Port layout for `--nodes N --base-port P`: node i (1..N) serves Kafka on 127.0.0.1:P+i-1 and, when it
votes in the controller quorum, the controller protocol on 127.0.0.1:P+N+i-1. The first min(3, N) nodes
are voters (`process.roles=broker,controller`); the rest are plain brokers. Every node gets
`controller.quorum.voters`, so it is a clustered node; with N >= 3 the topic defaults are Kafka's durable
ones (RF 3, min.insync.replicas 2) unless `--set` says otherwise.

With `metrics_port=M` (`--metrics-port M`) node i also serves Prometheus metrics on 127.0.0.1:M+i-1
(`metrics.port`, docs/broker.md#metrics).

`listener_names` (default `("PLAINTEXT",)`) names each node's Kafka listeners: the first on P+i-1 (what
`bootstrap_servers` lists), listener k (k >= 1) on P+(k+1)*N+i-1, after the controller ports. With
`CLIENT,INTERNAL` and `listener.security.protocol.map`/`inter.broker.listener.name`/`controller.listener.names`
in the settings, the nodes replicate and run the quorum over TLS (docs/broker.md "Security"); `controller_status`
then speaks TLS too, with the settings' key and trust stores.

`DIR/cluster.json` lists each node's id, ports, pid and data dir. `run_foreground` (the click command
`broker dev-cluster`) stops every node on Ctrl-C/SIGTERM; a node that dies is reported and the others keep
running (`--restart` starts it again). Tests drive the same class and use `kill`/`restart`/`pause`/`resume`
to inject failures into real processes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from broker.config import BrokerConfig
from broker.config_checks import check_broker_properties
from broker.security.listeners import controller_protocol
from broker.security.tls import client_context

MAX_VOTERS = 3
# Kafka's durable settings: every acknowledged write survives the loss of one node.
DURABLE_DEFAULTS = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
}


class DevClusterError(Exception):
    retriable = False


@dataclass(frozen=True)
class NodeInfo:
    node_id: int
    port: int
    controller_port: int | None  # None: a broker-only node (no controller listener)
    pid: int
    data_dir: str
    metrics_port: int | None = None  # None: the node serves no metrics


class DevCluster:
    def __init__(
        self,
        nodes: int,
        data_dir: Path,
        base_port: int,
        rack_count: int | None = None,
        settings: dict[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
        metrics_port: int | None = None,
        listener_names: tuple[str, ...] = ("PLAINTEXT",),
    ) -> None:
        if nodes < 1:
            raise DevClusterError(f"--nodes must be at least 1, got {nodes}")
        ports = (1 + len(listener_names)) * nodes
        if not listener_names:
            raise DevClusterError("at least one listener name is needed, e.g. PLAINTEXT")
        if not 1024 <= base_port <= 65535 - ports:
            raise DevClusterError(f"--base-port {base_port} leaves no room for {ports} ports in 1024..65535")
        if rack_count is not None and rack_count < 1:
            raise DevClusterError(f"--rack-count must be at least 1, got {rack_count}")
        if metrics_port is not None and not 1024 <= metrics_port <= 65536 - nodes:
            raise DevClusterError(f"--metrics-port {metrics_port} leaves no room for {nodes} ports in 1024..65535")
        self.nodes = nodes
        self.data_dir = data_dir
        self._file_lock = threading.Lock()  # nodes may be restarted from several threads at once
        self.base_port = base_port
        self.rack_count = rack_count
        self.settings = dict(settings or {})
        self.extra_args = extra_args
        self.metrics_base_port = metrics_port
        self.listener_names = tuple(name.upper() for name in listener_names)
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        # The same check every node's `broker start` makes, up front: one line here rather than N dead nodes.
        check_broker_properties({**self.node_settings(1), "listeners": self.listeners(1)})
        # A TLS quorum (controller listener mapped to SSL) is asked for its status over TLS as well.
        config = BrokerConfig().with_overrides(self.settings)
        controller_listener, protocol = controller_protocol(config)
        self._controller_tls = client_context(config, controller_listener) if protocol == "SSL" else None

    @property
    def cluster_file(self) -> Path:
        return self.data_dir / "cluster.json"

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.nodes + 1))

    @property
    def voters(self) -> list[int]:
        return self.node_ids[:MAX_VOTERS]

    def port(self, node_id: int) -> int:
        return self.base_port + node_id - 1

    def metrics_port(self, node_id: int) -> int | None:
        return None if self.metrics_base_port is None else self.metrics_base_port + node_id - 1

    def controller_port(self, node_id: int) -> int:
        return self.base_port + self.nodes + node_id - 1

    def listener_port(self, name: str, node_id: int) -> int:
        """Node `node_id`'s port of listener `name` (one of `listener_names`)."""
        index = self.listener_names.index(name.upper())
        return self.port(node_id) if index == 0 else self.base_port + (index + 1) * self.nodes + node_id - 1

    def listeners(self, node_id: int) -> str:
        return ",".join(f"{name}://127.0.0.1:{self.listener_port(name, node_id)}" for name in self.listener_names)

    def voters_spec(self) -> str:
        return ",".join(f"{n}@127.0.0.1:{self.controller_port(n)}" for n in self.voters)

    def node_settings(self, node_id: int) -> dict[str, str]:
        """The properties node `node_id` starts with (after the listener and data dir)."""
        props = {
            "node.id": str(node_id),
            "process.roles": "broker,controller" if node_id in self.voters else "broker",
            "controller.quorum.voters": self.voters_spec(),
        }
        if self.rack_count:
            props["broker.rack"] = f"rack-{node_id % self.rack_count}"
        if self.nodes >= 3:
            props.update(DURABLE_DEFAULTS)
        metrics_port = self.metrics_port(node_id)
        if metrics_port is not None:
            props["metrics.port"] = str(metrics_port)
        props.update(self.settings)
        return props

    def command(self, node_id: int) -> list[str]:
        sets = [arg for key, value in self.node_settings(node_id).items() for arg in ("--set", f"{key}={value}")]
        return [
            sys.executable, "-m", "broker.cli", "start",
            "--data-dir", str(self.data_dir / f"node-{node_id}"),
            "--listeners", self.listeners(node_id),
            *sets, *self.extra_args,
        ]  # fmt: skip

    def log_path(self, node_id: int) -> Path:
        return self.data_dir / f"node-{node_id}.log"

    def start(self, ready_timeout_s: float = 30.0) -> list[NodeInfo]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for n in self.node_ids:
            for port in (self.controller_port(n), *(self.listener_port(name, n) for name in self.listener_names)):
                if _port_open(port):
                    raise DevClusterError(f"port {port} is already in use; pick another --base-port")
        try:
            for n in self.node_ids:
                self._spawn(n)
            deadline = time.monotonic() + ready_timeout_s
            for n in self.node_ids:
                self._wait_listening(n, deadline)
        except DevClusterError:
            self.stop()
            raise
        self._write_cluster_file()
        return self.infos()

    def _spawn(self, node_id: int) -> None:
        (self.data_dir / f"node-{node_id}").mkdir(exist_ok=True)
        with self.log_path(node_id).open("ab") as log:  # the child keeps its own copy of the descriptor
            # Own session: Ctrl-C in the terminal reaches only the manager, which stops nodes in order.
            self.procs[node_id] = subprocess.Popen(
                self.command(node_id), stdout=log, stderr=log, start_new_session=True
            )

    def _wait_listening(self, node_id: int, deadline: float) -> None:
        proc, port = self.procs[node_id], self.port(node_id)
        while not _port_open(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise DevClusterError(f"node {node_id} did not start on port {port}; see {self.log_path(node_id)}")
            time.sleep(0.05)

    def _write_cluster_file(self) -> None:
        with self._file_lock:
            tmp = self.cluster_file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"nodes": [asdict(i) for i in self.infos()]}, indent=2))
            os.replace(tmp, self.cluster_file)

    def infos(self) -> list[NodeInfo]:
        return [
            NodeInfo(n, self.port(n), self.controller_port(n) if n in self.voters else None, p.pid,
                     str(self.data_dir / f"node-{n}"), self.metrics_port(n))
            for n, p in sorted(self.procs.items())
        ]  # fmt: skip

    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.port(n)}" for n in self.node_ids)

    def alive(self, node_id: int) -> bool:
        proc = self.procs.get(node_id)
        return proc is not None and proc.poll() is None

    def kill(self, node_id: int) -> None:
        """kill -9: no shutdown, no flush; the node's data dir stays as the crash left it."""
        proc = self._proc(node_id)
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)

    def restart(self, node_id: int, ready_timeout_s: float = 30.0) -> None:
        """Start a killed or stopped node again with the same command and data dir."""
        if self.alive(node_id):
            raise DevClusterError(f"node {node_id} is still running; kill it first")
        self._spawn(node_id)
        try:
            self._wait_listening(node_id, time.monotonic() + ready_timeout_s)
        finally:
            self._write_cluster_file()

    def pause(self, node_id: int) -> None:
        self._proc(node_id).send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self._proc(node_id).send_signal(signal.SIGCONT)

    def _proc(self, node_id: int) -> subprocess.Popen[bytes]:
        if node_id not in self.procs:
            raise DevClusterError(f"no node {node_id}; nodes are {self.node_ids}")
        return self.procs[node_id]

    def controller_status(self, node_id: int, timeout_s: float = 1.0) -> dict[str, Any] | None:
        """The node's `{"op": "status"}` admin answer on its controller port; None when it does not answer."""
        if node_id not in self.voters:
            return None
        try:
            with socket.create_connection(("127.0.0.1", self.controller_port(node_id)), timeout=timeout_s) as raw:
                s = raw if self._controller_tls is None else self._controller_tls.wrap_socket(
                    raw, server_hostname="127.0.0.1")
                with s:
                    s.sendall(b'{"op": "status"}\n')
                    reply: dict[str, Any] = json.loads(s.makefile("rb").readline())
                    return reply
        except (OSError, ValueError):
            return None

    def active_controller(self) -> int | None:
        """The voter that says it is the Raft leader (None while there is none)."""
        for n in self.voters:
            if self.alive(n) and (self.controller_status(n) or {}).get("role") == "leader":
                return n
        return None

    def stop(self, grace_s: float = 10.0) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)  # a paused node would never act on SIGTERM
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in self.procs.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.cluster_file.unlink(missing_ok=True)

    def run_foreground(self, restart: bool = False) -> int:
        """Start, then run until Ctrl-C/SIGTERM; always stop every node at the end.

        A node that dies is reported (exit code and where its log is) while the others keep running, as
        an operator expects of a local cluster; with `restart` it is started again on the same data dir.
        Without it, the manager ends (exit 1) once no node is left."""
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            for info in self.start():
                role = f"controller 127.0.0.1:{info.controller_port}, " if info.controller_port else ""
                print(f"node {info.node_id}: kafka 127.0.0.1:{info.port}, {role}pid {info.pid}", file=sys.stderr)
            print(f"bootstrap.servers={self.bootstrap_servers()}; Ctrl-C stops the cluster", file=sys.stderr)
            reported: set[int] = set()
            while not stop.wait(0.2):
                for node_id, proc in sorted(self.procs.items()):
                    if proc.poll() is None or node_id in reported:
                        continue
                    print(f"node {node_id} exited with code {proc.returncode} (log: {self.log_path(node_id)}); "
                          f"{'restarting it' if restart else 'the other nodes keep running'}", file=sys.stderr)
                    if not restart:
                        reported.add(node_id)
                        continue
                    try:
                        self.restart(node_id)
                        print(f"node {node_id}: restarted, pid {self.procs[node_id].pid}", file=sys.stderr)
                    except DevClusterError as exc:
                        print(f"node {node_id}: restart failed: {exc}", file=sys.stderr)
                        reported.add(node_id)
                if len(reported) == len(self.procs):
                    print("every node has exited; stopping", file=sys.stderr)
                    return 1
            return 0
        finally:
            self.stop()
            for s, h in old.items():
                signal.signal(s, h)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0
