"""Run one controller quorum member over TCP (asyncio) on 127.0.0.1 or any host.

Peers exchange JSON-lines Raft messages over one outgoing connection per peer (reconnected on
failure; messages sent while disconnected are dropped, which Raft tolerates); over TLS when the node's
controller listener is SSL (Kafka's `controller.listener.names`; broker/cluster/node.py builds the contexts).
The same port also takes admin lines (`status`, `records` (committed metadata from an index, after a snapshot when the
entries after that index were compacted away), `register`, `heartbeat`,
`create_topic`, `create_partitions`, `alter_config`, ...), answered with one JSON line; this is what tests
and, until the Kafka-protocol controller APIs are wired, the lead's broker glue can use.

    python -m broker.controller.tcp_node --node-id 1 --voters 1@127.0.0.1:19001,2@...,3@... --data-dir D
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import ssl
import time
import uuid
from pathlib import Path
from typing import Any

import click

from broker import config
from broker.controller.errors import ControllerError
from broker.controller.quorum import DEFAULT_SNAPSHOT_BYTES, QuorumController
from broker.controller.raft import Outgoing
from broker.controller.raft_storage import FileStorage
from broker.controller.wire import decode, encode
from broker.tasks import cancel_and_wait

log = logging.getLogger("broker.controller")
_MAX_LINE = 64 << 20


def parse_voters(spec: str) -> dict[int, tuple[str, int]]:
    """`1@host:port,2@host:port` (Kafka's controller.quorum.voters format), as a click parameter."""
    try:
        return config.parse_voters(spec)
    except config.ConfigError as e:
        raise click.BadParameter(str(e)) from e


class TcpController:
    def __init__(self, node_id: int, voters: dict[int, tuple[str, int]], data_dir: Path, *,
                 tls_server: ssl.SSLContext | None = None, tls_client: ssl.SSLContext | None = None, **kw: Any) -> None:
        self.node_id = node_id
        self.voters = voters
        # Both set when the controller listener is SSL: peers and brokers connect over TLS, and with
        # ssl.client.auth=required only holders of a certificate the trust store vouches for are served.
        self.tls_server = tls_server
        self.tls_client = tls_client
        self.tick_s = 0.005 if kw.get("election_timeout_ms", (150, 300))[0] < 500 else 0.02
        self.ctl = QuorumController(node_id, sorted(voters), FileStorage(data_dir / "raft"), **kw)
        self._peers: dict[int, asyncio.StreamWriter] = {}
        # Set whenever the commit index moves: what a broker in the same process waits on for metadata.
        self.committed = asyncio.Event()
        self._seen_commit = 0
        self._connecting: set[int] = set()
        self._connections: set[asyncio.Task[Any]] = set()

    def now_ms(self) -> int:
        # Wall clock, not a per-process monotonic one: heartbeat times in the metadata log are
        # compared by whichever controller is active later, so every controller needs the same base.
        return int(time.time() * 1000)

    def _send(self, out: list[Outgoing]) -> None:
        if self.ctl.raft.commit_index != self._seen_commit:
            self._seen_commit = self.ctl.raft.commit_index
            self.committed.set()
        for o in out:
            w = self._peers.get(o.to)
            if w is None or w.is_closing():
                self._peers.pop(o.to, None)
                if o.to not in self._connecting:
                    self._connecting.add(o.to)
                    asyncio.get_running_loop().create_task(self._connect(o.to))
                continue
            w.write(encode(o.message))

    async def _connect(self, peer: int) -> None:
        try:
            host, port = self.voters[peer]
            _, writer = await asyncio.wait_for(asyncio.open_connection(
                host, port, ssl=self.tls_client, server_hostname=host if self.tls_client else None), 1.0)
            writer.write(b'{"op":"peer"}\n')
            self._peers[peer] = writer
        except (OSError, TimeoutError) as exc:
            if isinstance(exc, ssl.SSLError):  # a certificate problem: say so, retrying will not fix it
                log.warning("TLS handshake with controller %s failed: %s", peer, exc)
            await asyncio.sleep(0.1)
        finally:
            self._connecting.discard(peer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            while line := await reader.readline():
                if line.startswith(b'{"op"'):
                    writer.write(json.dumps(self._admin(json.loads(line))).encode() + b"\n")
                    continue
                self._send(self.ctl.receive(decode(line)))
        except (OSError, ValueError) as e:
            log.warning("connection dropped: %s", e)
        except asyncio.CancelledError:
            pass  # run() is ending; ending normally keeps asyncio from logging the cancellation as an error
        finally:
            writer.close()
            self._connections.discard(task)

    def _admin(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        extra: dict[str, Any] = {}  # what an op answers besides the Raft index
        try:
            if op == "peer":
                return {"ok": True}
            if op == "status":
                return {"ok": True, **self.ctl.status()}
            if op == "records":
                got = self.ctl.committed_records(int(req.get("from", 0)))
                answer = {"ok": True, "records": got.records, "commit_index": self.ctl.raft.commit_index}
                if got.snapshot is not None:
                    answer |= {"snapshot_index": got.snapshot_index, "snapshot": got.snapshot}
                return answer
            if op == "register":
                idx = self.ctl.register_broker(req["broker_id"], req["host"], req["port"], req.get("rack"),
                                              str(req.get("incarnation", "")),
                                              tuple((str(n), str(h), int(p)) for n, h, p in req.get("endpoints") or ()))
            elif op == "heartbeat":
                idx = self.ctl.heartbeat(req["broker_id"])
            elif op == "alter_config":
                idx = self.ctl.alter_config(req["resource"], req["key"], req.get("value"))
            elif op == "alter_security":
                idx = self.ctl.alter_security(list(req["records"]))
            elif op == "create_topic":
                idx = self.ctl.create_topic(
                    req["name"], req["partitions"], req["replication_factor"], req.get("topic_id") or uuid.uuid4().hex,
                    req.get("configs") or {}, req.get("assignment"),
                )
            elif op == "create_partitions":
                idx = self.ctl.create_partitions(
                    req["topic"], int(req["count"]), req.get("assignment"), bool(req.get("validate_only"))
                )
            elif op == "delete_topic":
                idx = self.ctl.delete_topic(req["name"])
            elif op == "alter_partition":
                idx = self.ctl.alter_partition(
                    req["topic"], req["partition"], req["leader"], req["leader_epoch"], req["partition_epoch"],
                    tuple(req["isr"]),
                )
            elif op == "shutdown":
                idx = self.ctl.shutdown_broker(req["broker_id"])
            elif op == "allocate_producer_ids":
                idx, first = self.ctl.allocate_producer_ids(req["broker_id"])
                extra["first_id"] = first
            elif op == "elect_preferred_leaders":
                wanted = req.get("partitions")
                idx = self.ctl.elect_preferred_leaders([(t, int(p)) for t, p in wanted] if wanted is not None else None)
            else:
                return {"ok": False, "error": f"unknown op {op!r}"}
            self._send(self.ctl.raft.flush())
            return {"ok": True, "index": idx, **extra}
        except ControllerError as e:
            return {"ok": False, "error": e.kafka_error, "message": str(e), "leader": self.ctl.raft.leader}
        except KeyError as e:
            return {"ok": False, "error": f"missing field {e}"}
        except ValueError as e:
            return {"ok": False, "error": "INVALID_REQUEST", "message": str(e)}

    async def run(self, stop: asyncio.Event) -> None:
        host, port = self.voters[self.node_id]
        # One JSON line per message, and an InstallSnapshot carries the whole metadata state: far above
        # asyncio's default 64 KiB line limit on a cluster with many partitions (the same limit as the client's).
        server = await asyncio.start_server(self._serve, host, port, limit=_MAX_LINE, ssl=self.tls_server)
        log.info("controller %s listening on %s:%s", self.node_id, host, port)
        try:
            async with server:
                while not stop.is_set():
                    self._send(self.ctl.tick(self.now_ms()))
                    # Messages are handled as they arrive; the tick only drives timers (heartbeats every
                    # tens of ms, elections after a second), so a coarse period keeps an idle node idle.
                    await asyncio.sleep(self.tick_s)
        finally:
            for writer in self._peers.values():
                writer.close()
            await cancel_and_wait(list(self._connections), 2.0, f"controller {self.node_id} shutdown")


@click.command()
@click.option("--node-id", type=int, required=True)
@click.option("--voters", required=True, help="ID@HOST:PORT,... of every quorum member.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--session-timeout-ms", type=int, default=9000, show_default=True)
@click.option("--max-record-bytes-between-snapshots", type=click.IntRange(min=1), default=DEFAULT_SNAPSHOT_BYTES,
              show_default=True, help="metadata.log.max.record.bytes.between.snapshots: snapshot after this many "
              "bytes of applied records.")
@click.option("--election-timeout-ms", type=click.IntRange(min=50), default=1000, show_default=True,
              help="controller.quorum.election.timeout.ms (Kafka's default): a follower that hears no leader "
              "for a random time between this and twice this starts an election.")
def main(node_id: int, voters: str, data_dir: Path, session_timeout_ms: int,
         max_record_bytes_between_snapshots: int, election_timeout_ms: int) -> None:
    """Run one controller quorum member."""
    logging.basicConfig(level=logging.INFO)
    parsed = parse_voters(voters)
    if node_id not in parsed:
        raise click.BadParameter(f"--node-id {node_id} is not among the voters {sorted(parsed)}")
    # Heartbeats at a tenth of the election timeout, as the cluster node does: a loaded machine that
    # stalls a process for a few hundred milliseconds must not depose a healthy leader.
    node = TcpController(node_id, parsed, data_dir, session_timeout_ms=session_timeout_ms,
                         max_record_bytes_between_snapshots=max_record_bytes_between_snapshots,
                         election_timeout_ms=(election_timeout_ms, 2 * election_timeout_ms),
                         heartbeat_ms=max(10, election_timeout_ms // 10))

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await node.run(stop)

    asyncio.run(go())


if __name__ == "__main__":
    main()
