"""Turns: while clients have frames waiting, each handles a few at a time, and a one-read client goes first.

A read worker used to answer everything a connection had sent each time it read from it. With 255
clients pipelining 32 reads each, one pass of the reactor over its ready sockets was 8,160 reads
(76 ms at 107,000 reads/s), and a client sending one read (a producer asking for a route) whose
socket became ready just after the pass began waited for all of it: the prober's p50 was 0.07 ms,
its p99 71 ms (``bench.bigfleet --read-connections 255``).

So a connection the reactor reads from handles ``QUANTUM`` frames of what it read while this pass over
the sockets is within ``BUDGET`` and nobody waits, and queues the rest; else, if it read at most
``FIRST`` frames it handles them, and if more it queues them all (cut in two, a pipeline costs two writes); what it reads
meanwhile waits behind (past ``TURN_READ_LIMIT`` bytes, its socket is not read until its turn is done).
The queued connections take turns, ``QUANTUM`` frames each, round robin, for at most ``BUDGET`` seconds
per reactor turn, then the reactor reads its sockets again. A client with one read waiting is answered
in the pass that reads it, and a pass costs at most its budget plus one read per busy connection. When
the worker keeps up, nothing waits and every connection handles what it read at once, as before.
Java's Netty serves each channel's reads on its event loop in arrival order, with no such limit.
"""

import time
from collections import deque

#: frames a connection read while others wait may have to be handled at once (more wait their turn)
FIRST = 2
#: frames a queued connection handles per turn (its answers go out in one write): a client's usual
#: pipeline (8 per turn cost 40 % of the reads/s at 255 × 32: four times the writes and the client's reads)
QUANTUM = 32
#: bytes a connection waiting for its turn may have read before its socket is no longer read
TURN_READ_LIMIT = 1 << 16
#: seconds of turns per reactor turn, before the sockets are read again
BUDGET = 0.001


class Turns:
    def __init__(self, reactor, quantum=QUANTUM, budget=BUDGET, timer=time.perf_counter):
        self.reactor = reactor
        self.quantum = quantum
        self.budget = budget
        self.timer = timer
        self.queue = deque()
        self._call = None
        self._pass_deadline = None   # while the reactor reads its sockets: when this pass's budget ends

    def allowance(self):
        """How many frames a connection the reactor just read from may handle now: ``quantum`` while
        nobody waits and this pass over the sockets is within its budget, else ``FIRST``."""
        if self.queue:
            return FIRST
        now = self.timer()
        if self._pass_deadline is None:   # the first read of this pass: it ends with the reactor turn
            self._pass_deadline = now + self.budget
            self.reactor.callLater(0, self._pass_over)
            return self.quantum
        return self.quantum if now < self._pass_deadline else FIRST

    def _pass_over(self):
        self._pass_deadline = None

    def busy(self):
        """Some connection waits for its turn."""
        return bool(self.queue)

    def wait(self, connection):
        """``connection`` has frames left: it stops reading and waits for its turn."""
        self.queue.append(connection)
        if self._call is None:
            self._call = self.reactor.callLater(0, self._run)

    def _run(self):
        self._call = None
        queue, quantum = self.queue, self.quantum
        deadline = self.timer() + self.budget
        while queue:
            connection = queue.popleft()
            if connection.take_turn(quantum):
                queue.append(connection)
            if self.timer() >= deadline:
                break
        if queue:
            self._call = self.reactor.callLater(0, self._run)

    def stop(self):
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self.queue.clear()
