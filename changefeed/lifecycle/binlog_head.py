"""How far a changefeed's checkpoint is behind its source server's binlog head, in bytes.

The MySQL manual's SHOW BINARY LOGS lists every binlog file with its File_size; the bytes still to read
from a checkpoint at (file, pos) are the rest of that file plus every later file. A probe thread asks each
watched changefeed's source every `interval` seconds, on its own connections, so a slow or unreachable
source never stalls the owner loop; the owner reads the last answer (None until there is one).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from changefeed.lifecycle.source_uri import parse_source_uri
from changefeed.model import Position
from changefeed.source.binlog_positions import BinlogFile, binary_logs
from changefeed.source.server import session

log = logging.getLogger(__name__)


def bytes_behind(files: list[BinlogFile], position: Position) -> int:
    """Bytes of binlog after `position`: the rest of its file and all of every later file (by number)."""
    behind = 0
    for binlog in files:
        index = Position(binlog.name, 0).file_index
        if index > position.file_index:
            behind += binlog.size
        elif binlog.name == position.file:
            behind += max(0, binlog.size - position.pos)
    return behind


@dataclass(frozen=True)
class _Watch:
    source: str
    position: Position


class BinlogHeadProbe:
    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self._watches: dict[str, _Watch] = {}
        self._behind: dict[str, int] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="binlog-head-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(10)

    def watch(self, changefeed: str, source: str, position: Position) -> None:
        with self._lock:
            first = changefeed not in self._watches
            self._watches[changefeed] = _Watch(source, position)
        if first:
            self._wake.set()  # measure a new changefeed at once rather than after a whole interval

    def forget(self, changefeed: str) -> None:
        with self._lock:
            self._watches.pop(changefeed, None)
            self._behind.pop(changefeed, None)

    def behind(self, changefeed: str) -> int | None:
        with self._lock:
            return self._behind.get(changefeed)

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                watches = dict(self._watches)
            for changefeed, watch in watches.items():
                try:
                    with session(parse_source_uri(watch.source)) as cur:
                        behind = bytes_behind(binary_logs(cur), watch.position)
                except Exception as exc:  # the run itself reports source errors; here the gauge just goes stale
                    log.debug("changefeed %s: binlog head not read: %s", changefeed, exc)
                    continue
                with self._lock:
                    if changefeed in self._watches:
                        self._behind[changefeed] = behind
            self._wake.wait(self.interval)
            self._wake.clear()
