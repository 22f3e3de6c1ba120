"""Warm restart: the route tables saved to a file and restored at start.

The Java server forgets every route on restart, so clients get TOPIC_NOT_EXIST until
brokers re-register (up to 30 s). We restore the last snapshot with every broker's
heartbeat set to "now": routes are served at once, and brokers that do not come back
expire by the usual rule. A bad snapshot is logged and ignored, never fatal, and so is
one another instance wrote, or this one on another port (``owner``: an InstanceIdentity, whose
``may_restore`` decides): its brokers never registered here.

Files are written in version 3 (routes/slicedsnapshot.py): the encoding runs a chunk per reactor turn
(``save_in_background``; the write itself in a thread), and the restore puts the broker-level tables in
before the port listens and the topics a chunk per turn after (storage/restoring.py). Versions 1 and 2
are still read, at once. The file a restore read stays open (``baseline``) for the read workers started
with it: they restore the same bytes themselves instead of receiving a copy.
"""

import functools
import os

from twisted.internet import threads
from twisted.logger import Logger

from namesrv.storage.atomicfile import write_atomic
from namesrv.timing.scheduler import BULK


class RouteSnapshotFile:
    log = Logger()

    def __init__(self, path, routes, reactor, scheduler, owner=None, priority=BULK):
        """``scheduler``: the process's TurnScheduler, which runs the sliced jobs (a restore's topics, an
        encoding) a step at a time at ``priority``, after the reads and the brokers' requests of each turn."""
        self.path = path
        self.routes = routes
        self.owner = owner
        self.reactor = reactor
        self.cooperate = functools.partial(scheduler.cooperate, priority=priority, name="route snapshot")
        self.baseline = None       # the open file a sliced restore read (read workers restore it too)
        self.restore_in_progress = None
        self._writing = False

    def restore(self):
        """Restore the snapshot if there is a good one of this instance: at once (versions 1 and 2), or its
        broker-level tables now and its topics a chunk per reactor turn from ``continue_restore``.
        Returns True when a snapshot is (being) restored."""
        from namesrv.routes.snapshot import SnapshotError, open_sliced, restore_snapshot, snapshot_owner
        from namesrv.routes.slicedsnapshot import is_sliced, restore_steps

        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return False
        except OSError as e:
            self.log.warn("route snapshot {path} unreadable, starting empty: {err}", path=self.path, err=e)
            return False
        keep = False
        try:
            data = f.read()
            snapshot = open_sliced(data) if is_sliced(data) else None   # checked whole, once
            writer = snapshot.owner if snapshot is not None else snapshot_owner(data)
            if self.owner is not None and not self.owner.may_restore(writer):
                self.log.warn("route snapshot {path} ignored, starting empty: {why}", path=self.path,
                              why=self.owner.why_not(writer))
                return False
            if self.owner is not None and writer.get("listen") != self.owner.listen:
                self.log.info("route snapshot {path}: written while this instance listened on {then}, restored "
                              "on {now} (the same port: its brokers register here)", path=self.path,
                              then=writer.get("listen"), now=self.owner.listen)
            if snapshot is None:
                restore_snapshot(self.routes, data)
                self.log.info("routes restored from {path}", path=self.path)
                return True
            steps = restore_steps(self.routes, snapshot, self.routes.clock.seconds())
            next(steps)   # the broker-level tables, before the port listens
            from namesrv.storage.restoring import SnapshotRestore
            self.restore_in_progress = SnapshotRestore(self.routes, steps, self.path, snapshot.topics, self.cooperate)
            self.baseline, keep = f, True
            self.log.info("route snapshot {path}: {b} broker names restored, {n} topics follow while serving",
                          path=self.path, b=len(self.routes.broker_addr_table), n=snapshot.topics)
            return True
        except OSError as e:
            self.log.warn("route snapshot {path} unreadable, starting empty: {err}", path=self.path, err=e)
            return False
        except SnapshotError as e:
            self.log.warn("route snapshot {path} ignored: {err}", path=self.path, err=e)
            return False
        finally:
            if not keep:
                f.close()

    def continue_restore(self):
        """The topics of a sliced restore, a chunk per reactor turn (from now)."""
        if self.restore_in_progress is not None and not self.restore_in_progress.done:
            self.restore_in_progress.start()

    def take_baseline(self):
        """The open file the restore read, now the caller's to close (the read workers restore it too)."""
        baseline, self.baseline = self.baseline, None
        return baseline

    def release_baseline(self):
        """The read workers have the file (or none will take it): close ours."""
        baseline, self.baseline = self.baseline, None
        if baseline is not None:
            baseline.close()

    @property
    def restoring(self):
        return self.restore_in_progress is not None and not self.restore_in_progress.done

    def _steps(self):
        from namesrv.routes.slicedsnapshot import write_steps
        return write_steps(self.routes, self.owner.as_record() if self.owner is not None else None)

    def save_in_background(self):
        """Encode a chunk per reactor turn (tables are only read there), write in a thread. Not while a
        restore runs: the file on disk is what is being restored, and nothing changed since but liveness."""
        if self._writing or self.restoring:
            return None
        self._writing = True
        pieces = []
        steps = self._steps()

        def encode():
            pieces[:] = yield from steps

        d = self.cooperate(encode()).whenDone()
        d.addCallback(lambda ignored: threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(),
                                                                 write_atomic, self.path, pieces))

        def done(result):
            self._writing = False
            return result

        d.addBoth(done)
        d.addErrback(self._not_written)
        return d

    def _not_written(self, failure):
        from namesrv.routes.snapshot import SnapshotError
        if failure.check(SnapshotError):   # an integer beyond 64 bits, the tables replaced meanwhile...
            self.log.warn("route snapshot {path} not written: {err}", path=self.path, err=failure.value)
        else:
            self.log.failure("route snapshot write failed", failure)

    def save_now(self):
        """Synchronous save for shutdown (not while a restore runs: the file is still what it restores)."""
        from namesrv.routes.snapshot import SnapshotError
        if self.restoring:
            return
        try:
            steps = self._steps()
            while True:
                next(steps)
        except StopIteration as done:
            pieces = done.value
        except SnapshotError as e:
            self.log.warn("route snapshot {path} not written: {err}", path=self.path, err=e)
            return
        try:
            write_atomic(self.path, pieces)
        except OSError as e:
            self.log.warn("route snapshot {path} not written: {err}", path=self.path, err=e)


def read_whole(fd):
    """Every byte of the file open as ``fd``, read with pread (its offset may be shared with another process)."""
    size = os.fstat(fd).st_size
    data = bytearray(size)
    view, offset = memoryview(data), 0
    while offset < size:
        read = os.preadv(fd, [view[offset:]], offset)
        if not read:
            raise OSError("the file ended early")
        offset += read
    return bytes(data)
