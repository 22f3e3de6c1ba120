"""Keeps one file in step with an in-memory value, writing off the reactor thread.

Java rewrites its KV file and its properties file synchronously on every change. Here a
change calls ``changed()``, which returns a Deferred; the file is written with
``write_atomic`` in the reactor's thread pool, one write at a time. Changes that arrive
while a write is running are coalesced into the next write, which encodes the value as
it is then, so a burst of a hundred changes costs two writes, not a hundred.

Each change gets a generation number; a write records the generation it carries and a
write older than what is on disk is skipped, so the synchronous ``flush_sync`` used at
shutdown can never be overtaken by a slower thread write of older content.
"""

import threading

from twisted.internet import defer, threads
from twisted.logger import Logger
from twisted.python.failure import Failure

from namesrv.storage.atomicfile import write_atomic


class SerialFileWriter:
    log = Logger()

    def __init__(self, path, encode, reactor=None, keep_backup=True, what="file"):
        """``encode()`` returns the bytes to write; it runs on the reactor thread (a consistent snapshot)."""
        self.path = path
        self.encode = encode
        self.reactor = reactor
        self.keep_backup = keep_backup
        self.what = what
        self._lock = threading.Lock()   # one write_atomic at a time, thread or shutdown
        self._generation = 0            # bumped by every change
        self._on_disk = 0               # generation of the newest write that succeeded
        self._writing = None            # Deferred of the thread write in progress
        self._waiters = []              # Deferreds the next write will fire

    @property
    def pending(self):
        """True while some change is not on disk yet (including after a failed write)."""
        return self._on_disk < self._generation

    def changed(self):
        """Note a change; the Deferred fires once a write that includes it is on disk, or fails with its error."""
        self._generation += 1
        return self._wait_for_write()

    def flush(self):
        """A Deferred firing once every change so far is on disk (retries after a failed write)."""
        if not self.pending and self._writing is None:
            return defer.succeed(None)
        return self._wait_for_write()

    def flush_sync(self):
        """Write now on this thread (shutdown); True when the file is up to date afterwards."""
        if not self.pending:
            return True
        generation, data = self._generation, self.encode()
        try:
            self._write(data, generation)
        except OSError as e:
            self.log.error("{what} {path} not written at shutdown: {err}", what=self.what, path=self.path, err=e)
            return False
        return True

    # -- internals -----------------------------------------------------------
    def _wait_for_write(self):
        d = defer.Deferred()
        self._waiters.append(d)
        if self._writing is None:
            self._start()
        return d

    def _start(self):
        if self.reactor is None:
            from twisted.internet import reactor   # the global one, only when none was given
            self.reactor = reactor
        waiters, self._waiters = self._waiters, []
        generation = self._generation
        try:
            data = self.encode()
        except Exception:
            self._done(Failure(), waiters)
            return
        self._writing = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(),
                                                  self._write, data, generation)
        self._writing.addBoth(self._done, waiters)

    def _write(self, data, generation):
        with self._lock:
            if generation <= self._on_disk:
                return
            write_atomic(self.path, data, keep_backup=self.keep_backup)
            self._on_disk = generation

    def _done(self, result, waiters):
        self._writing = None
        if isinstance(result, Failure):
            self.log.error("{what} {path} not written: {err}", what=self.what, path=self.path, err=result.value)
            for d in waiters:
                d.errback(result)
        else:
            for d in waiters:
                d.callback(None)
        if self._waiters and self._writing is None:
            self._start()
        return None
