"""A timer as a child service: ``function`` every ``interval()`` seconds, the first call a while after start.

The NameServer's timers (the liveness scan, the KV print, route snapshots, the event log's
per-second aggregates) are children of its MultiService, so starting and stopping the server
starts and stops them, as ``TimerService`` does in Twisted's own services. Unlike TimerService
the first call waits ``first_delay`` seconds (Java's NamesrvController schedules the scan 5 s
and the KV print 1 min after start) and the interval is read when the timer (re)starts, so a
property changed at run time applies from the next start (``restart``).

``EasingLoop`` is the other kind of timer here: a wait someone is paused on, looked at often at first
(a takeover's drain, drainloop.py).
"""

from typing import Callable, Optional

from twisted.application import service
from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

log = Logger()


class PeriodicCall(service.Service):
    def __init__(self, name: str, function: Callable[[], object], interval: Callable[[], float],
                 first_delay: float, reactor: IReactorTime) -> None:
        self.name = name
        self.function = function
        self.interval = interval
        self.first_delay = first_delay
        self.reactor = reactor
        self.call: Optional[task.LoopingCall] = None
        self._delayed: Optional[IDelayedCall] = None

    @property
    def looping(self) -> bool:
        return self.call is not None and self.call.running

    def startService(self) -> None:
        service.Service.startService(self)
        self._delayed = self.reactor.callLater(self.first_delay, self._begin)

    def _begin(self) -> None:
        self._delayed = None
        self._loop(now=True)

    def _loop(self, now: bool) -> None:
        self.call = task.LoopingCall(self.function)
        self.call.clock = self.reactor
        self.call.start(self.interval(), now=now).addErrback(
            lambda failure: log.failure("timer {name} stopped", failure, name=self.name))

    def restart(self) -> None:
        """Apply a new ``interval()`` now (the next call one interval from now). A new loop: the old one may be
        waiting on its call's Deferred (a snapshot being written), and restarting it then would leave two."""
        call = self.call
        if call is not None and call.running:
            call.stop()
            self._loop(now=False)

    def stopService(self) -> None:
        service.Service.stopService(self)
        if self._delayed is not None and self._delayed.active():
            self._delayed.cancel()
        self._delayed = None
        call = self.call
        if call is not None and call.running:
            call.stop()


class EasingLoop:
    """``function`` every ``quick`` seconds for its first ``quick_calls`` calls, then every ``slow``.

    For a wait that usually ends within a few looks and that someone is paused on (a takeover's
    drain: every client waits from its start), but that may last longer when answers are still in
    flight. Each look goes over every connection, so a long wait is looked at less often and leaves
    the reactor to the work it waits for. ``function`` stops the loop (``stop``) when the wait is over.
    """

    def __init__(self, function: Callable[[], object], clock: IReactorTime, quick: float, slow: float,
                 quick_calls: int) -> None:
        self.function = function
        self.slow = slow
        self.quick_calls = quick_calls
        self.calls = 0
        self._call = task.LoopingCall(self._look)
        self._call.clock = clock
        self._quick = quick

    @property
    def running(self) -> bool:
        return self._call.running

    def start(self, now: bool) -> Deferred[task.LoopingCall]:
        return self._call.start(self._quick, now=now)

    def stop(self) -> None:
        self._call.stop()

    def _look(self) -> object:
        self.calls += 1
        if self.calls == self.quick_calls:
            self._call.interval = self.slow
        return self.function()
