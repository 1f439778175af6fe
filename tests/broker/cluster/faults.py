"""The fault-injection pieces of the safety tests: storage damage on a stopped node, and a seeded nemesis that
kills, pauses and damages nodes of a running cluster (ours or the Apache Kafka reference) while a writer records
every acknowledgement.

Storage damage works on Kafka's segment layout (`<log dir>/<topic>-<partition>/<base>.log`, record batches of
magic 2: base offset (8 bytes) and batch length (4 bytes) first), which both brokers write, so the same damage
hits both the same way.
"""

from __future__ import annotations

import os
import random
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tests.broker.cluster.clients import describe, wait_full_isr
from tests.broker.cluster.harness import Cluster, until


def seeds_from_env(variable: str, default: str) -> list[int]:
    """The nemesis seeds a test runs: `7` or `1-10` from the environment variable, else `default`."""
    first, _, last = os.environ.get(variable, default).partition("-")
    return list(range(int(first), int(last or first) + 1))


class Acknowledging(Protocol):
    """A writer the nemesis can wait on (Writer, TransactionalWriter)."""

    def acked_since(self, partition: int | None, since: float) -> int: ...


DAMAGE_KINDS = ("flip_byte", "cut_mid_batch", "garbage_tail", "delete_indexes", "power_loss")


def batch_boundaries(log: Path) -> list[int]:
    """Byte positions where the segment's batches start, and its end (stops at the first torn batch)."""
    data = log.read_bytes()
    positions, position = [], 0
    while position + 12 <= len(data):
        positions.append(position)
        (length,) = struct.unpack_from(">i", data, position + 8)
        if length <= 0 or position + 12 + length > len(data):
            return positions
        position += 12 + length
    positions.append(position)
    return positions


def _active_segments(data_dir: Path, topic: str) -> list[Path]:
    """Each partition directory's newest segment: the one a crash damages."""
    out = []
    for directory in sorted(data_dir.glob(f"{topic}-*")):
        logs = sorted(directory.glob("*.log"))
        if logs and logs[-1].stat().st_size > 0:
            out.append(logs[-1])
    return out


def damage(data_dir: Path, topic: str, kind: str, rng: random.Random) -> list[str]:
    """Damage every partition of `topic` under a stopped node's `data_dir`; returns what was done, for the test log.

    - flip_byte: one byte in the middle of the newest segment inverted (a batch whose CRC no longer matches);
    - cut_mid_batch: the segment cut inside one of its later batches (a torn write);
    - garbage_tail: random bytes appended after the last batch;
    - delete_indexes: every `.index`/`.timeindex` of the partition removed;
    - power_loss: the segment cut back to an earlier batch boundary, as if the page cache never reached disk.
    """
    done = []
    for log in _active_segments(data_dir, topic):
        size = log.stat().st_size
        bounds = batch_boundaries(log)
        later = bounds[len(bounds) // 2:-1] or bounds[:1]
        if kind == "flip_byte":
            position = size // 2
            with log.open("r+b") as f:
                f.seek(position)
                byte = f.read(1)
                f.seek(position)
                f.write(bytes([byte[0] ^ 0xFF]))
            done.append(f"{log.parent.name}: byte {position} of {size} flipped")
        elif kind == "cut_mid_batch":
            start = rng.choice(later)
            end = bounds[bounds.index(start) + 1] if start != bounds[-1] else size
            cut = start + max(1, (end - start) // 2)
            with log.open("r+b") as f:
                f.truncate(cut)
            done.append(f"{log.parent.name}: cut at byte {cut} of {size} (inside the batch at {start})")
        elif kind == "garbage_tail":
            with log.open("ab") as f:
                f.write(rng.randbytes(1000))
            done.append(f"{log.parent.name}: 1000 garbage bytes appended to {size}")
        elif kind == "delete_indexes":
            for index in [*log.parent.glob("*.index"), *log.parent.glob("*.timeindex")]:
                index.unlink()
            done.append(f"{log.parent.name}: indexes deleted")
        elif kind == "power_loss":
            cut = rng.choice(later)
            with log.open("r+b") as f:
                f.truncate(cut)
            done.append(f"{log.parent.name}: cut back to the batch boundary {cut} of {size}")
        else:
            raise ValueError(f"unknown damage {kind!r}; one of {DAMAGE_KINDS}")
    return done


@dataclass
class Nemesis:
    """Seeded faults against a running cluster, one at a time; each waits until writes are acknowledged again
    and every replica is back in the ISR, so the next fault starts from a whole cluster."""

    cluster: Cluster
    topic: str
    writer: Acknowledging
    seed: int
    session_s: float = 3.0  # the harness's broker.session.timeout.ms
    history: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.faults: dict[str, Callable[[], str]] = {
            "kill_leader": self.kill_leader,
            "kill_controller": self.kill_controller,
            "pause_node": self.pause_node,
            "kill_all": self.kill_all,
            "damage_storage": self.damage_storage,
        }

    def run(self, rounds: int, names: list[str] | None = None) -> None:
        """`rounds` faults chosen by the seed, or the `names` given, in order."""
        for n in range(len(names) if names else rounds):
            name = names[n] if names else self.rng.choice(sorted(self.faults))
            started = time.monotonic()
            what = self.faults[name]()
            self.history.append(f"round {n}: {what}")
            print(f"{self.cluster.name} seed {self.seed} round {n}: {what}", flush=True)
            until(lambda s=started: self.writer.acked_since(None, s) >= 20, 60,  # type: ignore[misc]
                  f"round {n} ({what}): acknowledged writes again")
            wait_full_isr(self.cluster.bootstrap, self.topic, timeout=60)

    def _delay(self) -> float:
        """A restart inside the session timeout (the controller has not fenced the node yet) or after it."""
        return self.rng.choice([0.0, self.rng.uniform(0, self.session_s * 0.5), self.session_s * 1.5])

    def _leader(self) -> int:
        partition = self.rng.choice(sorted(describe(self.cluster.bootstrap, self.topic)))
        return describe(self.cluster.bootstrap, self.topic)[partition].leader

    def kill_and_restart(self, node: int) -> float:
        """kill -9 of `node`, restarted after a seeded delay (returned)."""
        delay = self._delay()
        self.cluster.kill(node)
        time.sleep(delay)
        self.cluster.restart(node)
        return delay

    def kill_leader(self) -> str:
        node = self._leader()
        return f"kill -9 of leader {node}, restarted after {self.kill_and_restart(node):.1f} s"

    def kill_controller(self) -> str:
        node = int(until(self.cluster.active_controller, 30, "an active controller"))  # type: ignore[call-overload]
        return f"kill -9 of the active controller {node}, restarted after {self.kill_and_restart(node):.1f} s"

    def pause_node(self) -> str:
        node = self.rng.choice(self.cluster.node_ids)
        pause = self.rng.uniform(0.5, self.session_s * 1.5)
        self.cluster.pause(node)
        time.sleep(pause)
        self.cluster.resume(node)
        return f"SIGSTOP of node {node} for {pause:.1f} s"

    def kill_all(self) -> str:
        for node in self.cluster.node_ids:
            self.cluster.kill(node)
        # Restarted together: a broker serves only once a controller quorum has its registration, so one node
        # waiting alone to be ready would wait for ever.
        with ThreadPoolExecutor(len(self.cluster.node_ids)) as pool:
            list(pool.map(self.cluster.restart, self.cluster.node_ids))
        self.cluster.wait_formed()
        return "kill -9 of every node, then all restarted"

    def damage_storage(self) -> str:
        node, kind = self._leader(), self.rng.choice(DAMAGE_KINDS)
        self.cluster.kill(node)
        done = damage(self.cluster.data_dir(node), self.topic, kind, self.rng)
        self.cluster.restart(node)  # inside the session timeout: the case that lost writes
        return f"kill -9 of leader {node}, {kind}: {'; '.join(done)}"
