"""A route snapshot restored while the process serves: the rest of it a chunk per step, and who waits.

The broker-level tables go in before the port listens (slicedsnapshot.restore_steps' first step); the
topics follow a chunk per step (Twisted's Cooperator: a step, then the reactor's turn), so a restarted
process answers from the moment it listens. Meanwhile (``RouteInfoManager.restoring`` is this object):

- route reads of topics already restored are answered; those of topics not restored yet wait for the end
  (``wait()``), so a client never hears TOPIC_NOT_EXIST for a topic the snapshot holds (a Java client takes
  that for "no such topic");
- requests that change the tables or list them whole wait for the end too (the route processor);
- a change that cannot wait (a connection closing, the liveness scan, a takeover's copy) first finishes the
  restore at once (``finish_now``, the manager's guard).

A chunk that fails its checks (a file this code did not write: its CRCs were right) stops the restore and
empties the tables: as if there had been no snapshot (logged).
"""

import gc
import time

from twisted.internet import defer
from twisted.logger import Logger

from namesrv.routes.slicedsnapshot import SnapshotError


class SnapshotRestore:
    """The rest of ``steps`` (slicedsnapshot.restore_steps, its first step taken) for ``routes``."""

    log = Logger()

    def __init__(self, routes, steps, path, topics, cooperate):
        self.routes = routes
        self.path = path
        self.topics = topics
        self.done = False
        self.failed = None
        self._steps = steps
        self._waiters = []
        self._began = time.monotonic()
        self._task = None
        self._cooperate = cooperate
        routes.restoring = self

    def start(self):
        """Go on a step per reactor turn (the tables are long-lived: each step's objects leave the
        collector's reach at once, or a full collection would walk a million-entry table)."""
        self._task = self._cooperate(self._run())
        self._task.whenDone().addErrback(self._failed)

    def _run(self):
        try:
            for _ in self._steps:
                gc.freeze()
                yield
        except SnapshotError as e:   # handled here: the job ends well, the scheduler logs nothing more
            self._give_up(e)
            return
        self._finished()

    def finish_now(self):
        """Restore what is left at once (a change that cannot wait)."""
        if self.done:
            return
        try:
            for _ in self._steps:
                pass
        except SnapshotError as e:
            self._give_up(e)
            return
        gc.freeze()
        self._finished()

    def wait(self):
        """A Deferred that fires (with None) once the restore has ended, well or not."""
        if self.done:
            return defer.succeed(None)
        waiting = defer.Deferred()
        self._waiters.append(waiting)
        return waiting

    def _failed(self, failure):
        if self.done:
            return None
        failure.trap(SnapshotError)
        self._give_up(failure.value)
        return None

    def _give_up(self, error):
        self.failed = error
        self.log.error("route snapshot {path}: {err}; the restore stopped, starting with empty tables",
                       path=self.path, err=error)
        self.routes.tables.reset()
        self._end()

    def _finished(self):
        if self.done:
            return
        self.log.info("routes restored from {path}: {n} topics in {ms:.0f} ms (served meanwhile)", path=self.path,
                      n=len(self.routes.topic_queue_table), ms=(time.monotonic() - self._began) * 1000)
        self._end()

    def _end(self):
        self.done = True
        if self.routes.restoring is self:
            self.routes.restoring = None
        waiters, self._waiters = self._waiters, []
        for waiting in waiters:
            waiting.callback(None)
