"""Where a controller's Raft journal lives: a file written in order, durable only once synced.

Raft's safety rests on three things being on disk before anyone hears of them: a vote, a term,
and a log entry a member acknowledges. pysyncobj's own journal writes through an mmap it never
msyncs and its term file without fsync (PySyncObj #84), so a power cut can forget a vote. Here
the journal (``journal.py``) only ever appends records or replaces the whole file, and nothing
is durable until ``sync()``'s Deferred fires; the member link holds back every message written
after the last sync until then (``transport.py``).

``FileDisk`` does the writing and the fsyncs in a thread (the reactor never waits for a disk),
one batch at a time and in order: whatever was appended while a sync ran goes in the next.
``MemoryDisk`` is the same contract in memory for the simulated cluster: what was not synced
when ``power_cut()`` is called is gone (a torn last write included), which is the failure a
real power cut causes and a kill -9 cannot.
"""

import os

from twisted.internet import defer, threads
from twisted.logger import Logger

from namesrv.storage.atomicfile import fsync_directory


class _Ops:
    """Appends and whole-file replacements not yet handed to a sync, in order."""

    def __init__(self):
        self.items = []

    def append(self, data):
        if self.items and self.items[-1][0] == "append":
            self.items[-1][1].append(data)
        else:
            self.items.append(("append", [data]))

    def replace(self, data, first_sync):
        self.items.append(("replace", data, tuple(first_sync)))

    def take(self):
        items, self.items = self.items, []
        return items

    def __bool__(self):
        return bool(self.items)


class _Syncing:
    """The one-sync-at-a-time loop both disks share: ``sync`` fires once everything before it is durable."""

    def __init__(self):
        self._ops = _Ops()
        self._running = None
        self._waiters = []

    def append(self, data):
        self._ops.append(data)

    def replace(self, data, first_sync=()):
        self._ops.replace(data, first_sync)

    def sync(self):
        d = defer.Deferred()
        if not self._ops and self._running is None:
            d.callback(None)
            return d
        self._waiters.append(d)
        if self._running is None:
            self._next()
        return d

    def _next(self):
        ops = self._ops.take()
        waiters, self._waiters = self._waiters, []
        self._running = self._write(ops)
        self._running.addBoth(self._done, waiters)

    def _done(self, result, waiters):
        self._running = None
        for d in waiters:
            if isinstance(result, Exception) or hasattr(result, "raiseException"):
                d.errback(result)
            else:
                d.callback(None)
        if self._waiters:
            self._next()

    def _write(self, ops):
        raise NotImplementedError


class FileDisk(_Syncing):
    """The journal file; appends and fsyncs run in the reactor's thread pool, one batch at a time."""

    log = Logger()

    def __init__(self, path, reactor):
        super().__init__()
        self.path = path
        self.reactor = reactor
        self._fd = None

    def read(self):
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return b""

    def truncate(self, length):
        """Drop a torn tail found at start (before anything else is written)."""
        with open(self.path, "r+b") as f:
            f.truncate(length)
            os.fsync(f.fileno())

    def _write(self, ops):
        return threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), self._write_now, ops)

    def _write_now(self, ops):
        for op in ops:
            if op[0] == "append":
                if self._fd is None:
                    self._open()
                data = b"".join(op[1])
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view):]
            else:
                self._replace(op[1], op[2])
        if self._fd is None:
            self._open()
        os.fsync(self._fd)

    def _open(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fsync_directory(os.path.dirname(os.path.abspath(self.path)))

    def _replace(self, data, first_sync):
        for path in first_sync:          # e.g. the snapshot the new journal starts after
            fsync_path(path)
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        os.replace(tmp, self.path)
        fsync_directory(os.path.dirname(os.path.abspath(self.path)))
        self._open()

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def fsync_path(path):
    """fsync a file and its directory entry, or a directory; a missing one has nothing to make durable."""
    if os.path.isdir(path):
        fsync_directory(path)
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(os.path.dirname(os.path.abspath(path)))


class MemoryDisk(_Syncing):
    """The journal in memory, for simulated clusters: durable bytes, and what a power cut loses.

    A sync takes ``latency`` seconds of ``clock`` (a ``task.Clock``), so a cut can fall between a
    write and its fsync. ``power_cut(rng)`` keeps only what was synced, plus, when ``rng`` says
    so, a torn prefix of the write that was under way.
    """

    def __init__(self, clock, latency=0.002):
        super().__init__()
        self.clock = clock
        self.latency = latency
        self.durable = b""
        self._in_flight = None
        self.syncs = 0

    def read(self):
        return self.durable

    def truncate(self, length):
        self.durable = self.durable[:length]

    def _write(self, ops):
        d = defer.Deferred()
        self._in_flight = (ops, d)
        self.clock.callLater(self.latency, self._complete, ops, d)
        return d

    def _complete(self, ops, d):
        if self._in_flight is None or self._in_flight[1] is not d:
            return                     # lost in a power cut
        self._in_flight = None
        self.durable = self._apply(self.durable, ops)
        self.syncs += 1
        d.callback(None)

    @staticmethod
    def _apply(data, ops):
        for op in ops:
            data = data + b"".join(op[1]) if op[0] == "append" else op[1]
        return data

    def power_cut(self, rng=None):
        """Forget everything not synced. With ``rng``, a random prefix of the write under way survives."""
        in_flight = self._forget()
        if in_flight is not None and rng is not None and rng.random() < 0.5:
            written = self._apply(self.durable, in_flight[0])
            if len(written) > len(self.durable) and written.startswith(self.durable):
                self.durable = written[:rng.randrange(len(self.durable), len(written) + 1)]

    def crash(self, rng=None):
        """The process dies (the machine does not): what it had not handed to a write is gone; the write
        under way either reached the page cache whole or not at all."""
        in_flight = self._forget()
        if in_flight is not None and rng is not None and rng.random() < 0.5:
            self.durable = self._apply(self.durable, in_flight[0])

    def _forget(self):
        in_flight, self._in_flight = self._in_flight, None
        self._ops.take()
        self._waiters = []
        self._running = None
        return in_flight
