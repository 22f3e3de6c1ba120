"""Where a controller's Raft journal lives: a file written in order, durable only once synced.

Raft's safety rests on three things being on disk before anyone hears of them: a vote, a term,
and a log entry a member acknowledges. pysyncobj's own journal writes through an mmap it never
msyncs and its term file without fsync (PySyncObj #84), so a power cut can forget a vote. Here
the journal (``journal.py``) only ever appends records or replaces the whole file, and nothing
is durable until ``sync()``'s Deferred fires; the member link holds back every message written
after the last sync until then (``transport.py``).

The snapshot goes through the same queue (``write_file``: a sibling file written whole, fsynced,
renamed over the old one, the directory fsynced, as storage/atomicfile.py writes every file), so that
the journal is never rewritten without the entries a snapshot replaced before that snapshot is
durable: order is the whole protocol.

``FileDisk`` does the writing and the fsyncs in a thread (the reactor never waits for a disk),
one batch at a time and in order: whatever was handed over while a sync ran goes in the next.
``MemoryDisk`` is the same contract in memory for the simulated cluster. A crash or a power cut
there stops the batch under way at a random operation: the operations before it are done, an
append under way leaves a torn prefix, a file or journal replacement under way leaves the old
file (its rename never happened): every point of a snapshot (before its fsync, between fsync and
rename, after) is a place a simulated crash can fall.
"""

import random
from collections.abc import Callable
from typing import Literal, Union

import os

from twisted.internet import defer, threads
from twisted.internet.interfaces import IReactorThreads, IReactorTime
from twisted.python.failure import Failure
from twisted.logger import Logger

from namesrv.storage.atomicfile import fsync_directory, remove_leftovers, write_atomic

#: one operation of a batch: appends (merged), a whole-journal replacement, a sibling file written whole
Op = Union[tuple[Literal["append"], list[bytes]], tuple[Literal["replace"], bytes], tuple[Literal["file"], str, bytes]]


class _Ops:
    """Appends and whole-file replacements not yet handed to a sync, in order."""

    def __init__(self) -> None:
        self.items: list[Op] = []

    def append(self, data: bytes) -> None:
        if self.items and self.items[-1][0] == "append":
            self.items[-1][1].append(data)
        else:
            self.items.append(("append", [data]))

    def replace(self, data: bytes) -> None:
        self.items.append(("replace", data))

    def write_file(self, name: str, data: bytes) -> None:
        self.items.append(("file", name, data))

    def take(self) -> list[Op]:
        items, self.items = self.items, []
        return items

    def __bool__(self) -> bool:
        return bool(self.items)


class _Syncing:
    """The one-sync-at-a-time loop both disks share: ``sync`` fires once everything before it is durable."""

    def __init__(self) -> None:
        self._ops = _Ops()
        self._running: defer.Deferred[None] | None = None
        self._waiters: list[defer.Deferred[None]] = []

    def append(self, data: bytes) -> None:
        self._ops.append(data)

    def replace(self, data: bytes) -> None:
        self._ops.replace(data)

    def write_file(self, name: str, data: bytes) -> None:
        """Replace the sibling file ``name`` with ``data``, atomically, in order with the journal's writes."""
        self._ops.write_file(name, data)

    def sync(self) -> defer.Deferred[None]:
        d: defer.Deferred[None] = defer.Deferred()
        if not self._ops and self._running is None:
            d.callback(None)
            return d
        self._waiters.append(d)
        if self._running is None:
            self._next()
        return d

    def _next(self) -> None:
        ops = self._ops.take()
        waiters, self._waiters = self._waiters, []
        self._running = self._write(ops)
        self._running.addBoth(self._done, waiters)

    def _done(self, result: None | Failure, waiters: list[defer.Deferred[None]]) -> None:
        self._running = None
        for d in waiters:
            if isinstance(result, Exception) or hasattr(result, "raiseException"):
                d.errback(result)
            else:
                d.callback(None)
        if self._waiters:
            self._next()

    def _write(self, ops: list[Op]) -> defer.Deferred[None]:
        raise NotImplementedError


class FileDisk(_Syncing):
    """The journal file; appends and fsyncs run in the reactor's thread pool, one batch at a time."""

    log = Logger()

    def __init__(self, path: str, reactor: IReactorThreads) -> None:
        super().__init__()
        self.path = path
        self.reactor = reactor
        self._fd: int | None = None

    def read(self) -> bytes:
        """The journal's bytes (at start: temp files of a replacement a crash interrupted are removed)."""
        self._remove_leftovers(self.path)
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def truncate(self, length: int) -> None:
        """Drop a torn tail found at start (before anything else is written)."""
        with open(self.path, "r+b") as f:
            f.truncate(length)
            os.fsync(f.fileno())

    def _write(self, ops: list[Op]) -> defer.Deferred[None]:
        return threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), self._write_now, ops)

    def _write_now(self, ops: list[Op]) -> None:
        for op in ops:
            if op[0] == "append":
                fd = self._fd if self._fd is not None else self._open()
                data = b"".join(op[1])
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            elif op[0] == "replace":
                self._replace(op[1])
            else:
                self._write_sibling(op[1], op[2])
        os.fsync(self._fd if self._fd is not None else self._open())

    def _open(self) -> int:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fsync_directory(os.path.dirname(os.path.abspath(self.path)))
        return self._fd

    def _replace(self, data: bytes) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        write_atomic(self.path, data)
        self._open()

    def _sibling(self, name: str) -> str:
        if os.sep in name or name in ("", ".", ".."):
            raise ValueError("a sibling file name, not a path: %r" % name)
        return os.path.join(os.path.dirname(os.path.abspath(self.path)), name)

    def _write_sibling(self, name: str, data: bytes) -> None:
        write_atomic(self._sibling(name), data)

    def read_file(self, name: str) -> bytes | None:
        """The sibling file's bytes, or None when there is none (at start: its leftover temp files are removed)."""
        path = self._sibling(name)
        self._remove_leftovers(path)
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def _remove_leftovers(self, path: str) -> None:
        if self._running is None:   # a batch under way may be writing ``path``'s temp file right now
            remove_leftovers(path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class MemoryDisk(_Syncing):
    """The journal and its sibling files in memory, for simulated clusters: what is durable, and what a
    crash or a power cut loses.

    A sync takes ``latency`` seconds of ``clock`` (a ``task.Clock``), so a cut can fall between a
    write and its fsync. ``power_cut(rng)`` and ``crash(rng)`` keep what was synced and, when ``rng``
    says so, the operations of the batch under way up to a random one (see the module docstring).
    ``operations`` counts the operations made durable, by kind (``file`` is a snapshot written).
    """

    def __init__(self, clock: IReactorTime, latency: float = 0.002) -> None:
        super().__init__()
        self.clock = clock
        self.latency = latency
        self.durable = b""
        self.files: dict[str, bytes] = {}
        self._in_flight: tuple[list[Op], defer.Deferred[None]] | None = None
        self.syncs = 0
        self.operations = {"append": 0, "replace": 0, "file": 0}
        #: called with the batch about to be written (the simulation may choose to cut in it)
        self.on_write: Callable[[list[Op]], object] | None = None

    def read(self) -> bytes:
        return self.durable

    def read_file(self, name: str) -> bytes | None:
        return self.files.get(name)

    def truncate(self, length: int) -> None:
        self.durable = self.durable[:length]

    def _write(self, ops: list[Op]) -> defer.Deferred[None]:
        d: defer.Deferred[None] = defer.Deferred()
        self._in_flight = (ops, d)
        if self.on_write is not None:
            self.on_write(ops)
        self.clock.callLater(self.latency, self._complete, ops, d)
        return d

    def _complete(self, ops: list[Op], d: defer.Deferred[None]) -> None:
        if self._in_flight is None or self._in_flight[1] is not d:
            return                     # lost in a crash or a power cut
        self._in_flight = None
        for op in ops:
            self._apply(op)
        self.syncs += 1
        d.callback(None)

    def _apply(self, op: Op, torn: int | None = None) -> None:
        self.operations[op[0]] += 1
        if op[0] == "append":
            data = b"".join(op[1])
            self.durable += data if torn is None else data[:torn]
        elif op[0] == "replace":
            self.durable = op[1]
        else:
            self.files[op[1]] = op[2]

    def _partial(self, ops: list[Op], rng: random.Random) -> None:
        """The batch stopped at a random operation: those before it done, an append under way torn."""
        stop = rng.randrange(len(ops) + 1)
        for op in ops[:stop]:
            self._apply(op)
        under_way = ops[stop] if stop < len(ops) else None
        if under_way is not None and under_way[0] == "append":     # a local: mypy narrows the operation's kind
            size = sum(len(part) for part in under_way[1])
            self._apply(under_way, torn=rng.randrange(size + 1))

    def power_cut(self, rng: random.Random | None = None) -> None:
        """Forget everything not synced; with ``rng``, half the time part of the batch under way survives."""
        in_flight = self._forget()
        if in_flight is not None and rng is not None and rng.random() < 0.5:
            self._partial(in_flight[0], rng)

    def crash(self, rng: random.Random | None = None) -> None:
        """The process dies (the machine does not): what it had not handed to a write is gone; of the batch
        under way, the part the thread had written when it died."""
        in_flight = self._forget()
        if in_flight is not None and rng is not None:
            self._partial(in_flight[0], rng)

    def _forget(self) -> tuple[list[Op], defer.Deferred[None]] | None:
        in_flight, self._in_flight = self._in_flight, None
        self._ops.take()
        self._waiters = []
        self._running = None
        return in_flight


#: what a journal writes through: the file, or memory in a simulated cluster
Disk = Union[FileDisk, MemoryDisk]
