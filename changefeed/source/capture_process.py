"""A CaptureSource run in a child process, so binlog reading and row decoding get a core of their own.

    source = CaptureProcess(settings, CaptureOptions(...), start=checkpoint_or_None, stop=event)
    for event in source.events(): ...      # the same events, in the same order, as CaptureSource's

One Python process is bound by its GIL: capture (reading and decoding the binlog) and delivery (routing,
encoding, producing) each take about half of a row's CPU, so splitting them over two processes is what lets
a second core help (docs/benchmarks.md, issue 19). The child runs the very same `CaptureSource`; what it
yields crosses one pipe, in order, pickled in batches: whatever the child decoded while this side was busy,
at most `max_batch` items. A full pipe stops the child as a slow delivery stops an in-process capture, so
memory stays bounded, and per-key order and the checkpoint rule are the runner's as before (it sees the
same event sequence; a checkpoint still only follows acknowledgements).

The child's log records, snapshot progress and failure travel in the same stream, after the events that
preceded them: a failure is raised here after the events before it were handed on, as in-process. The child
dies with its parent (Linux `PR_SET_PDEATHSIG`): a changefeed killed -9 leaves no capture behind that could
go on holding a replication connection under the changefeed's server id.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection

from changefeed.errors import CaptureProcessError
from changefeed.model import CaptureEvent, Checkpoint
from changefeed.source.capture import CaptureOptions, CaptureSource
from changefeed.source.server import ConnectionSettings
from changefeed.source.snapshot import ProgressCallback, SnapshotProgress

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class _LogLine:
    name: str
    level: int
    message: str


@dataclass(frozen=True)
class _Failed:
    error: BaseException
    trace: str


@dataclass(frozen=True)
class _End:
    pass


class CaptureProcess:
    """`CaptureSource`'s interface (`events()`, `close()`), the work done in a child process (a new
    interpreter: never a fork of a process that runs librdkafka's threads)."""

    def __init__(self, settings: ConnectionSettings, options: CaptureOptions | None = None, *,
                 start: Checkpoint | None = None, stop: threading.Event | None = None,
                 on_progress: ProgressCallback | None = None, max_batch: int = 1000) -> None:
        self.settings = settings
        self.options = options or CaptureOptions()
        self.start = start
        self.stop = stop or threading.Event()
        self.on_progress = on_progress
        self.max_batch = max_batch
        self._process: subprocess.Popen[bytes] | None = None

    def events(self) -> Iterator[CaptureEvent]:
        read_fd, write_fd = os.pipe()
        try:
            # A fresh interpreter running only `capture_child` (not multiprocessing's spawn, which imports the
            # caller's __main__ again: a script that builds a Changefeed without a main guard would start one
            # more in the child). The parent's sys.path comes along, so whatever imported us imports it.
            process = subprocess.Popen(
                [sys.executable, "-m", "changefeed.source.capture_child", str(write_fd), self.options.changefeed_id],
                stdin=subprocess.PIPE, pass_fds=(write_fd,),
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # only the child writes: its exit is seen here as the end of the pipe
        receiver = Connection(read_fd, writable=False)
        self._process = process
        assert process.stdin is not None
        try:
            # The child's arguments; then its stdin stays open until this side stops (EOF is its stop).
            with contextlib.suppress(BrokenPipeError):  # a child that died at once: its end is read below
                process.stdin.write(pickle.dumps((self.settings, self.options, self.start, self.max_batch,
                                                  os.getpid(), logging.getLogger().getEffectiveLevel()),
                                                 pickle.HIGHEST_PROTOCOL))
                process.stdin.flush()
            while not self.stop.is_set():
                if not receiver.poll(0.1):
                    continue
                try:
                    data = receiver.recv_bytes()
                except (EOFError, OSError):  # the child's end, maybe in the middle of a batch
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(1.0)
                    raise CaptureProcessError(
                        f"the capture process of changefeed {self.options.changefeed_id} (pid {process.pid}) ended "
                        f"with exit code {process.returncode} before its last event; the changefeed starts it "
                        "again from its checkpoint") from None
                for item in pickle.loads(data):
                    if isinstance(item, (_LogLine, SnapshotProgress, _Failed, _End)):
                        if self._control(item):
                            return
                    else:
                        yield item
        finally:
            receiver.close()
            _end_process(process)

    def _control(self, item: _LogLine | SnapshotProgress | _Failed | _End) -> bool:
        """Act on what is not an event; True at the child's end."""
        if isinstance(item, _LogLine):
            logging.getLogger(item.name).log(item.level, "%s", item.message)
        elif isinstance(item, SnapshotProgress):
            if self.on_progress is not None:
                self.on_progress(item)
        elif isinstance(item, _Failed):
            log.debug("the capture process failed:\n%s", item.trace)
            raise item.error
        return isinstance(item, _End)

    def close(self) -> None:
        if self._process is not None:
            _end_process(self._process)

    @property
    def exit_code(self) -> int | None:
        """The last child's exit code (negative: the signal that ended it); None while it runs or before one."""
        return None if self._process is None else self._process.poll()


def _end_process(process: subprocess.Popen[bytes]) -> None:
    """Tell the child to stop (EOF on its stdin) and give it a moment to leave (closing its replication
    connection), then kill it."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(1.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5.0)


class _Outbox:
    """The child's side of the pipe: items queue here while a sender thread pickles and sends what has queued
    (so a busy parent gets larger batches); `put` waits while `max_batch` items are queued."""

    def __init__(self, conn: Connection, max_batch: int) -> None:
        self._conn, self._max = conn, max_batch
        self._items: list[object] = []
        self._cond = threading.Condition()
        self._closed = self._broken = False
        self._thread = threading.Thread(target=self._send, name="capture-outbox", daemon=True)
        self._thread.start()

    def put(self, item: object) -> None:
        with self._cond:
            while len(self._items) >= self._max and not self._broken:
                self._cond.wait()
            if self._broken:
                raise BrokenPipeError("the changefeed no longer reads the capture's events")
            self._items.append(item)
            self._cond.notify_all()

    def _send(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:
                    return
                batch, self._items = self._items, []
                self._cond.notify_all()
            try:
                data = pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # never silently: the parent reads this and stops the changefeed
                data = pickle.dumps([_Failed(CaptureProcessError(f"cannot hand a captured event over: {exc!r}"),
                                             traceback.format_exc())])
            try:
                self._conn.send_bytes(data)
            except OSError:  # the parent stopped reading (its stop, or its end)
                with self._cond:
                    self._broken = True
                    self._cond.notify_all()
                return

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._conn.close()


class _ForwardLogs(logging.Handler):
    def __init__(self, outbox: _Outbox) -> None:
        super().__init__()
        self._outbox = outbox

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(BrokenPipeError):
            message = record.getMessage()
            if record.exc_info:  # the traceback as text: the exception object may not travel
                message += "\n" + logging.Formatter().formatException(record.exc_info)
            self._outbox.put(_LogLine(record.name, record.levelno, message))


def _die_with_parent(parent: int) -> None:
    """Linux kills this process when its parent dies. Elsewhere the parent's end closes the pipes, which
    ends the child at its next read of stdin or send."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _portable(exc: BaseException) -> BaseException:
    """The failure as itself when it pickles (its class and message), else a CaptureProcessError saying it."""
    try:
        pickle.loads(pickle.dumps(exc, pickle.HIGHEST_PROTOCOL))
        return exc
    except Exception:
        error = CaptureProcessError(f"capture failed: {type(exc).__name__}: {exc}")
        error.retriable = bool(getattr(exc, "retriable", False))
        return error


def run_child(fd: int) -> None:
    """The child's main (`python -m changefeed.source.capture_child FD ID`): arguments from stdin, events to FD."""
    settings, options, start, max_batch, parent, log_level = pickle.load(sys.stdin.buffer)
    _die_with_parent(parent)
    stop = threading.Event()
    threading.Thread(target=_stop_at_eof, args=(stop,), name="capture-stop", daemon=True).start()
    outbox = _Outbox(Connection(fd, readable=False), max_batch)
    root = logging.getLogger()
    root.setLevel(log_level)
    root.addHandler(_ForwardLogs(outbox))
    source = CaptureSource(settings, options, start=start, stop=stop, on_progress=outbox.put)
    try:
        for event in source.events():
            outbox.put(event)
        outbox.put(_End())
    except BrokenPipeError:
        pass  # the parent is done with us
    except BaseException as exc:
        with contextlib.suppress(BrokenPipeError):
            outbox.put(_Failed(_portable(exc), traceback.format_exc()))
    finally:
        source.close()
        outbox.close()


def _stop_at_eof(stop: threading.Event) -> None:
    # Raw reads of fd 0, not sys.stdin.buffer: this daemon thread is still blocked here when the main thread
    # ends, and a buffered reader's lock held at interpreter shutdown aborts the process ("Fatal Python
    # error: _enter_buffered_busy"). Nothing follows the pickled arguments on stdin but its EOF.
    while os.read(sys.stdin.fileno(), 4096):
        pass
    stop.set()
