"""A read that finds the replica stale waits a moment for the publication on its way, and asks the main process
too when that moment runs long: whichever answers first answers.

The replica is stale from the moment the main process acknowledges a change (the shared counter moves)
until the worker has applied the publication that carries it. A read forwarded to the main process
meanwhile waits there behind whatever runs: during a fleet's first registration, every large
REGISTER_BROKER, so route reads waited many times longer than a local answer. The publication itself
comes soon after the acknowledgement (a registration's is one message), and
applying it makes the replica fresh again. So a route read that finds the replica stale, while it holds
a complete copy, waits for that: answered here once the replica holds every change acknowledged before
the read arrived (read-after-write holds, as for any local answer). What a read waits for is the counter
as it read at the read's arrival, not its newest value: while a fleet registers back to back, the main
process acknowledges the next registration before the worker has applied the previous one's publication,
and a read waiting for the newest would wait for ever.

A read still waiting after ``HEDGE`` is also sent to the main process (hedged, as a tail-tolerant client
sends a second copy of a slow request): when the main process is free it answers within a fraction of a
millisecond, and when it is in the middle of a registration the replica usually answers first. The first
answer goes to the client, the other is dropped (WorkerConnection.hedge, by opaque). So a read waits
for the sooner of the two, never the full ``WAIT``; past ``WAIT`` it no longer waits for the replica.
Not while a publication of several parts is being applied (a mass disconnect's, a part per reactor turn):
the replica stays stale for longer than a read should wait, so it is forwarded at once. Everything else
goes on as ``WorkerDispatcher`` decides.
"""

import collections

from twisted.internet import defer
from zope.interface import implementer

from namesrv.interfaces import IDispatcher

#: how long a read may wait for the replica to be fresh (seconds): a registration's publication is applied
#: a few ms after its acknowledgement, more when the worker shares its core; a read forwarded then waits behind
#: the main process's registrations. While a fleet registers back to back the worker lags behind at times,
#: and a shorter wait sent many more reads to the busy main process, with a longer tail
#: (figures: bench/results/design-figures.md#fresh-reads). Hedged reads are answered by the main process
#: meanwhile if it is sooner (``HEDGE``).
WAIT = 0.025
#: how long a read waits for the replica alone before the main process is asked too (seconds): most
#: publications of one registration are applied by then, so the main process answers few reads twice
HEDGE = 0.002

_WAITING, _HERE, _MAIN = "waiting", "answered here", "left to the main process"


class WaitingRead:
    """A read waiting for the replica: ``state`` says who answers it (waiting, here, or the main process)."""

    __slots__ = ("hedge_at", "deadline", "needed", "request", "connection", "frame", "answer", "hedged", "state")

    def __init__(self, now, hedge, wait, needed, request, connection, frame):
        self.hedge_at, self.deadline, self.needed = now + hedge, now + wait, needed
        self.request, self.connection, self.frame = request, connection, frame
        self.answer = defer.Deferred()
        self.hedged = False
        self.state = _WAITING

    @property
    def answered_here(self):
        return self.state is _HERE

    def answered_by_main(self):
        """The main process's answer to the hedged copy came first (it goes to the client): stop waiting."""
        if self.state is _WAITING:
            self._leave(_MAIN)

    def _leave(self, state, answer=None):
        self.state = state
        self.connection.waiting_reads -= 1
        self.answer.callback(answer)


@implementer(IDispatcher)
class WaitForFresh:
    """A dispatcher in front of ``inner`` (a WorkerDispatcher): a local read on a stale but complete
    ``replica`` waits up to ``wait`` seconds for it (``replica.applied_listeners`` tell when it may be fresh),
    and from ``hedge`` on for the main process's answer too."""

    def __init__(self, inner, replica, reactor, wait=WAIT, hedge=HEDGE):
        self.inner = inner
        self.replica = replica
        self.reactor = reactor
        self.wait = wait
        self.hedge = hedge
        self.waiting = collections.deque()     # WaitingReads, in arrival order
        self._to_hedge = collections.deque()   # the same, until hedged
        self.waited = 0
        self.forwarded = 0
        self.hedges = 0
        self._timer = None
        replica.applied_listeners.append(self.release)

    def dispatch(self, request, connection):
        replica = self.replica
        if (request.code in replica.local_codes and replica.complete and not replica.held and self.wait > 0
                and not replica.in_publication and not replica.fresh() and not connection.closing):
            read = WaitingRead(self.reactor.seconds(), self.hedge, self.wait, replica.shared.read(), request,
                               connection, connection.current_frame)
            # its socket stays in this process until they are answered (handoff.can_hand_off)
            connection.waiting_reads += 1
            self.waiting.append(read)
            if self.hedge < self.wait and not request.is_oneway:
                self._to_hedge.append(read)
            self.waited += 1
            self._arm()
            return read.answer
        return self.inner.dispatch(request, connection)

    def release(self):
        """A publication's message was applied: answer every waiting read the replica now holds enough
        for (they are in arrival order, so in the order of the counter values they need)."""
        holds = self.replica.holds
        self._answer_oldest(lambda read: holds(read.needed))

    def flush(self):
        """Answer or forward every waiting read now (a drain: no read may stay behind)."""
        self._answer_oldest(lambda read: True)

    def _expired(self):
        self._timer = None
        now = self.reactor.seconds()
        to_hedge = self._to_hedge
        while to_hedge and to_hedge[0].hedge_at <= now:
            read = to_hedge.popleft()
            if read.state is _WAITING and not read.connection.closing:
                read.hedged = True
                self.hedges += 1
                read.connection.hedge(read.frame, read)
        self._answer_oldest(lambda read: read.deadline <= now)

    def _answer_oldest(self, ready):
        """Answer (or forward) waiting reads from the oldest on, while ``ready(read)``; then re-arm the timer."""
        waiting = self.waiting
        while waiting and (waiting[0].state is not _WAITING or ready(waiting[0])):
            read = waiting.popleft()
            if read.state is not _WAITING:
                continue   # the main process answered its hedged copy first
            holds = self._holds(read)   # one look at the counter for the decision
            if read.hedged and not holds:
                read._leave(_MAIN)   # its copy is with the main process, whose answer goes out
            elif holds and not read.connection.closing:
                read._leave(_HERE, self.replica.registry.dispatch(read.request, read.connection))
            else:
                read._leave(_MAIN, self._forward(read))
        self._arm()

    def _holds(self, read):
        """The replica holds what ``read`` needs (one look at the counter per decision)."""
        replica = self.replica
        return replica.fresh() or replica.holds(read.needed)

    def _forward(self, read):
        """Send the read to the main process (never to the inner dispatcher: one decision from one look at
        the counter, which the main process moves at any moment; asked twice, it could say stale, then fresh)."""
        if not read.connection.closing:
            self.forwarded += 1
            read.connection.forward(read.frame, expects_answer=not read.request.is_oneway)
        return None

    def _arm(self):
        waiting, to_hedge = self.waiting, self._to_hedge
        while waiting and waiting[0].state is not _WAITING:
            waiting.popleft()
        while to_hedge and to_hedge[0].state is not _WAITING:
            to_hedge.popleft()
        if not waiting:
            if self._timer is not None and self._timer.active():
                self._timer.cancel()
            self._timer = None
            return
        due = min(waiting[0].deadline, to_hedge[0].hedge_at) if to_hedge else waiting[0].deadline
        if self._timer is not None and self._timer.active():
            if self._timer.getTime() <= due:
                return
            self._timer.cancel()
        self._timer = self.reactor.callLater(max(0.0, due - self.reactor.seconds()), self._expired)
