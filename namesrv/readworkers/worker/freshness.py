"""A read that finds the replica stale waits a moment for the publication on its way, instead of going
to the main process at once.

The replica is stale from the moment the main process acknowledges a change (the shared counter moves)
until the worker has applied the publication that carries it. A read forwarded to the main process
meanwhile waits there behind whatever runs: during a fleet's first registration, every 600 KB
REGISTER_BROKER (several ms each), so route reads waited 14 ms at the median and 41 ms at p99 with a
million topics. The publication itself comes within a few ms (a registration's is one message), and
applying it makes the replica fresh again. So a route read that finds the replica stale, while it holds
a complete copy, waits up to ``WAIT`` for that: answered here once the replica holds every change
acknowledged before the read arrived (read-after-write holds, as for any local answer), else forwarded as
before. What a read waits for is the counter as it read at the read's arrival, not its newest value: while
a fleet registers back to back, the main process acknowledges the next registration before the worker has
applied the previous one's publication, and a read waiting for the newest would wait for ever. Not while
a publication of several parts is being applied (a mass disconnect's, a part per reactor turn): the
replica stays stale for longer than a read should wait, so it is forwarded at once. Everything else goes
on as ``WorkerDispatcher`` decides.
"""

import collections

from twisted.internet import defer
from zope.interface import implementer

from namesrv.interfaces import IDispatcher

#: how long a read may wait for the replica to be fresh before it is forwarded (seconds): a registration's
#: publication is applied 2-5 ms after its acknowledgement, more when the worker shares its core; a read
#: forwarded then waits behind the main process's registrations (7-10 ms each at a million topics, end to
#: end). While a fleet registers back to back the worker lags by more than 8 ms at times, and with 8 ms
#: four times as many reads went to the busy main process: reads p99 during the burst 38-51 ms, with 25 ms
#: 26-27 ms (bench/results/issue41-cold-registration.md, section 9). A read still waits only until the
#: replica holds what it needs.
WAIT = 0.025


@implementer(IDispatcher)
class WaitForFresh:
    """A dispatcher in front of ``inner`` (a WorkerDispatcher): a local read on a stale but complete
    ``replica`` waits up to ``wait`` seconds for it (``replica.applied_listeners`` tell when it may be fresh)."""

    def __init__(self, inner, replica, reactor, wait=WAIT):
        self.inner = inner
        self.replica = replica
        self.reactor = reactor
        self.wait = wait
        self.waiting = collections.deque()   # (deadline, needed, request, connection, frame, answer)
        self.waited = 0
        self.forwarded = 0
        self._timer = None
        replica.applied_listeners.append(self.release)

    def dispatch(self, request, connection):
        replica = self.replica
        if (request.code in replica.local_codes and replica.complete and not replica.held and self.wait > 0
                and not replica.in_publication and not replica.fresh() and not connection.closing):
            answer = defer.Deferred()
            # its socket stays in this process until they are answered (handoff.can_hand_off)
            connection.waiting_reads = getattr(connection, "waiting_reads", 0) + 1
            self.waiting.append((self.reactor.seconds() + self.wait, replica.shared.read(), request, connection,
                                 connection.current_frame, answer))
            self.waited += 1
            self._arm()
            return answer
        return self.inner.dispatch(request, connection)

    def release(self):
        """A publication's message was applied: answer every waiting read the replica now holds enough
        for (they are in arrival order, so in the order of the counter values they need)."""
        holds = self.replica.holds
        self._answer_oldest(lambda entry: holds(entry[1]))

    def flush(self):
        """Answer or forward every waiting read now (a drain: no read may stay behind)."""
        self._answer_oldest(lambda entry: True)

    def _expired(self):
        self._timer = None
        now = self.reactor.seconds()
        self._answer_oldest(lambda entry: entry[0] <= now)

    def _answer_oldest(self, ready):
        """Answer (or forward) waiting reads from the oldest on, while ``ready(entry)``; then re-arm the timer."""
        waiting = self.waiting
        while waiting and ready(waiting[0]):
            _, needed, request, connection, frame, answer = waiting.popleft()
            connection.waiting_reads = getattr(connection, "waiting_reads", 1) - 1
            answer.callback(self._answer(request, connection, frame, needed))
        self._arm()

    def _answer(self, request, connection, frame, needed):
        """Answer here if the replica holds what the read waited for (``needed``), else forward it."""
        if connection.closing:
            return None
        replica = self.replica
        # One decision from one look at the counter, which the main process moves at any moment: asked
        # twice (here, then by the inner dispatcher), it could say fresh, then stale, and send the read
        # on as if it were being handled now.
        if replica.fresh() or replica.holds(needed):
            return replica.registry.dispatch(request, connection)
        self.forwarded += 1
        connection.forward(frame, expects_answer=not request.is_oneway)
        return None

    def _arm(self):
        if not self.waiting:
            if self._timer is not None and self._timer.active():
                self._timer.cancel()
            self._timer = None
            return
        if self._timer is None or not self._timer.active():
            delay = max(0.0, self.waiting[0][0] - self.reactor.seconds())
            self._timer = self.reactor.callLater(delay, self._expired)
