"""A takeover's drain, as a wait: look whether everything is drained until it is, or a grace has passed.

Both ends of a takeover drain this way: the old main process (namesrv/handover/handing.py) and each
of its read workers (namesrv/readworkers/worker/entry.py). Every client is paused from the drain's
start until the new process reads its socket, and a drain takes two looks at least (hand over, then
see the handovers finished), so the first ``QUICK_LOOKS`` looks are ``QUICK`` apart. A look goes over
every connection, so a drain that lasts longer (answers still in flight) is looked at every ``SLOW``,
leaving the reactor to the work it waits for (figures: bench/results/design-figures.md#takeover-drain).
What each end looks at and what it says are its own; how long each may take (``WORKER_GRACE``,
``MAIN_GRACE``) is set here, side by side, since the main process's drain waits for its workers'.
"""

from typing import Callable

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from namesrv.timing.periodic import EasingLoop

log = Logger()

QUICK = 0.001
QUICK_LOOKS = 20
SLOW = 0.005

#: how long a read worker's drain may take before what is left is closed
WORKER_GRACE = 5.0
#: how long the main process's drain may take before it goes on regardless: it is settled only once its
#: workers have drained, so it outlasts their grace
MAIN_GRACE = 10.0


class DrainLoop:
    """Calls ``drained(late)`` on the easing schedule until it returns true, then stops and calls
    ``done(late)``. ``late`` says that ``grace`` seconds have passed since ``start``: what a late drain
    does is the caller's choice (the main process goes on regardless; a worker closes what it could
    not hand over, and waits until those are gone)."""

    def __init__(self, drained: Callable[[bool], bool], done: Callable[[bool], object], clock: IReactorTime,
                 grace: float) -> None:
        self.drained = drained
        self.done = done
        self.clock = clock
        self.grace = grace
        self._deadline = 0.0   # start sets it
        self._loop = EasingLoop(self._look, clock, QUICK, SLOW, QUICK_LOOKS)

    @property
    def running(self) -> bool:
        return self._loop.running

    def start(self, now: bool) -> None:
        """The grace counts from here; ``now``: the first look at once, else after ``QUICK``."""
        self._deadline = self.clock.seconds() + self.grace
        self._loop.start(now=now).addErrback(self._failed)

    def stop(self) -> None:
        """Stop looking (the drain's owner stops); nothing is called back. Harmless when not running."""
        if self._loop.running:
            self._loop.stop()

    def _look(self) -> None:
        late = self.clock.seconds() >= self._deadline
        if not self.drained(late):
            return
        self._loop.stop()
        self.done(late)

    @staticmethod
    def _failed(failure: Failure) -> None:
        log.failure("the drain stopped looking", failure)
