"""Turns: while clients have frames waiting, each handles a few at a time, and a one-read client goes first.

A read worker used to answer everything a connection had sent each time it read from it. With hundreds
of clients pipelining their reads, one pass of the reactor over its ready sockets was thousands of reads,
and a client sending one read (a producer asking for a route) whose socket became ready just after
the pass began waited for all of it.

So a connection the reactor reads from handles ``QUANTUM`` frames of what it read while this reactor pass is
within the scheduler's one budget (``TurnScheduler.remaining()``: the turn that ran first in this pass spent
part of it) and nobody waits, and queues the rest; else, if it read at most
``FIRST`` frames it handles them, and if more it queues them all (cut in two, a pipeline costs two writes); what it reads
meanwhile waits behind (past ``TURN_READ_LIMIT`` bytes, its socket is not read until its turn is done).
The queued connections take turns, ``QUANTUM`` frames each, round robin: that is one job of the worker's
scheduler (namesrv/timing/scheduler.py, ``READS``: before replica applies), a connection's turn per
step, so its turns share the one budget per reactor turn with everything else, then the reactor reads
its sockets again. A client with one read waiting is answered in the pass that reads it, and a pass
costs at most its budget plus one read per busy connection. When the worker keeps up, nothing waits
and every connection handles what it read at once, as before.
Java's Netty serves each channel's reads on its event loop in arrival order, with no such limit.
"""

from collections import deque

from twisted.logger import Logger

from namesrv.timing.scheduler import READS

log = Logger()

#: frames a connection read while others wait may have to be handled at once (more wait their turn)
FIRST = 2
#: frames a queued connection handles per turn (its answers go out in one write): a client's usual
#: pipeline; fewer per turn mean more writes for the same reads (bench/results/design-figures.md#read-worker-turns)
QUANTUM = 32
#: bytes a connection waiting for its turn may have read before its socket is no longer read
TURN_READ_LIMIT = 1 << 16


class Turns:
    """The connections waiting for their turn, and the scheduler job that gives them their turns."""

    def __init__(self, scheduler, quantum=QUANTUM):
        self.scheduler = scheduler
        self.quantum = quantum
        self.queue = deque()
        self._job = scheduler.job(self._turns, READS, "a read worker's turns")

    def allowance(self):
        """How many frames a connection the reactor just read from may handle now: ``quantum`` while
        nobody waits and this reactor pass is within its budget, else ``FIRST``."""
        if self.queue:
            return FIRST
        return self.quantum if self.scheduler.may_go_on() else FIRST

    def busy(self):
        """Some connection waits for its turn."""
        return bool(self.queue)

    def wait(self, connection):
        """``connection`` has frames left: it waits for its turn."""
        self.queue.append(connection)
        self._job.wake()

    def leave(self, connection):
        """``connection`` no longer waits (its peer stopped reading its answers)."""
        try:
            self.queue.remove(connection)
        except ValueError:
            pass

    def _turns(self):
        """The job: a connection's turn per step, round robin, until none waits."""
        queue, quantum = self.queue, self.quantum
        while queue:
            connection = queue.popleft()
            try:
                more = connection.take_turn(quantum)
            except Exception:   # never expected: the registry answers a processor's failure itself
                log.failure("{peer}: its turn failed; closing it", peer=connection.peer)
                connection.abort()
                more = False
            if more:
                queue.append(connection)
            yield

    def stop(self):
        self._job.stop()
        self.queue.clear()
