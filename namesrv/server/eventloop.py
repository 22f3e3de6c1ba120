"""The reactor a read worker runs on: Twisted's epoll reactor, serving ready sockets in the order they became ready.

Twisted's ``EPollReactor.doPoll`` asks the kernel for every ready socket at once (``maxevents`` is the number
of sockets it watches) and handles them all before it polls again, each inside ``log.callWithLogger``. With
hundreds of clients each sending one read, one pass is every client's read: a read that arrives just after a
pass began waits for all of it, then for its place in the next one, so the slowest reads wait far longer than
the mean. And the logging context, pushed and popped for every ready socket, costs more than the route lookup
it wraps (figures: bench/results/design-figures.md#read-worker-passes).

Here a pass takes at most ``MAX_EVENTS`` ready sockets. The kernel keeps its ready list in the order the
sockets became ready and puts the ones not taken back at its head (``ep_send_events``), so the sockets are
served first come, first served, in passes of a bounded size: a read waits for the reads that came before it,
not for a whole pass plus a place in the next. The timed calls (the scheduler's turn) still run between two
passes. Netty's event loop does the same: a bounded selected-keys array, then its tasks. Events are
handled without the logging context (``callWithLogger``): a failure is still logged, without the
connection's prefix. ``passes`` counts the passes (IReactorPasses), so the process's scheduler knows when a
new one begins without a timed call per pass (namesrv/timing/scheduler.py).
"""

import errno

from twisted.internet.epollreactor import EPollReactor
from twisted.internet.main import installReactor
from zope.interface import implementer

from namesrv.interfaces import IReactorPasses

#: ready sockets handled per pass: enough to keep the system calls per read low (one ``epoll_wait`` per 64
#: reads at most), few enough that a pass is a fraction of a millisecond of reads
MAX_EVENTS = 64


@implementer(IReactorPasses)
class FairEPollReactor(EPollReactor):
    """An epoll reactor whose passes take at most ``max_events`` ready sockets, oldest ready first."""

    def __init__(self, max_events=MAX_EVENTS):
        EPollReactor.__init__(self)
        self.max_events = max_events
        self.passes = 0

    def doPoll(self, timeout):
        if timeout is None:
            timeout = -1   # wait until something is ready
        try:
            events = self._poller.poll(timeout, self.max_events)
        except OSError as err:
            if err.errno == errno.EINTR:
                return
            raise
        selectables = self._selectables
        handle = self._doReadOrWrite
        for fd, event in events:
            selectable = selectables.get(fd)
            if selectable is not None:
                handle(selectable, fd, event)
        self.passes += 1   # after the sockets: a turn run before them and they share a pass

    doIteration = doPoll


#: what doPoll relies on of EPollReactor (since Twisted 10; a Twisted without them keeps its own reactor)
SUPPORTED = all(hasattr(EPollReactor, name) for name in ("_doReadOrWrite", "doPoll")) and \
    "_poller" in EPollReactor.__init__.__code__.co_names and "_selectables" in EPollReactor.__init__.__code__.co_names


def install(max_events=MAX_EVENTS):
    """Install a FairEPollReactor as the process's reactor (before anything imports ``twisted.internet.reactor``);
    None, and Twisted's default stays, where the epoll reactor is not what it relies on."""
    if not SUPPORTED:
        return None
    reactor = FairEPollReactor(max_events)
    installReactor(reactor)
    return reactor
