"""The takeover's drain loop (timing/drainloop.py) on a task.Clock: when it looks, when it calls back, and
what a late drain is told."""

from twisted.internet import task
from twisted.logger import capturedLogs

from namesrv.timing import drainloop
from namesrv.timing.drainloop import DrainLoop


class Drain:
    """A drain that is over after ``looks_needed`` looks (never, with None); records every look and the end."""

    def __init__(self, clock, looks_needed=None, late_ends_it=False):
        self.clock = clock
        self.looks_needed = looks_needed
        self.late_ends_it = late_ends_it
        self.looks = []
        self.ends = []

    def drained(self, late):
        self.looks.append((round(self.clock.seconds(), 3), late))
        return len(self.looks) == self.looks_needed or (late and self.late_ends_it)

    def done(self, late):
        self.ends.append((round(self.clock.seconds(), 3), late))


def loop_for(drain, grace=1.0):
    return DrainLoop(drain.drained, drain.done, drain.clock, grace)


def test_a_drain_over_on_the_third_look_is_called_back_once_and_looked_at_no_more():
    clock = task.Clock()
    drain = Drain(clock, looks_needed=3)
    loop = loop_for(drain)
    loop.start(now=True)
    assert drain.looks == [(0.0, False)] and loop.running
    clock.pump([drainloop.QUICK] * 10)
    assert drain.looks == [(0.0, False), (0.001, False), (0.002, False)]
    assert drain.ends == [(0.002, False)] and not loop.running and not clock.getDelayedCalls()


def test_not_now_the_first_look_is_one_quick_interval_later():
    clock = task.Clock()
    drain = Drain(clock, looks_needed=1)
    loop_for(drain).start(now=False)
    assert drain.looks == []
    clock.advance(drainloop.QUICK)
    assert drain.looks == [(0.001, False)] and drain.ends == [(0.001, False)]


def test_looks_are_quick_at_first_then_slow():
    clock = task.Clock()
    drain = Drain(clock)
    loop_for(drain).start(now=True)
    clock.pump([drainloop.QUICK] * (drainloop.QUICK_LOOKS - 1))
    assert len(drain.looks) == drainloop.QUICK_LOOKS
    clock.pump([drainloop.QUICK] * 10)
    assert len(drain.looks) == drainloop.QUICK_LOOKS + 2 and drain.ends == []


def test_a_drain_that_ends_when_late_is_called_back_late_at_the_first_look_after_the_grace():
    clock = task.Clock()
    drain = Drain(clock, late_ends_it=True)
    loop = loop_for(drain, grace=0.5)
    loop.start(now=True)
    clock.pump([drainloop.SLOW] * 99)
    assert drain.ends == [] and all(not late for _, late in drain.looks)
    clock.pump([drainloop.SLOW] * 2)
    assert drain.ends == [(0.5, True)] and drain.looks[-1] == (0.5, True) and not loop.running


def test_a_drain_that_waits_past_its_grace_is_told_it_is_late_until_it_ends():
    """A worker closes what it could not hand over once late, and ends only when those are gone."""
    clock = task.Clock()
    drain = Drain(clock)
    closed = []

    def drained(late):
        drain.drained(late)
        if late and not closed:
            closed.append(clock.seconds())   # closes what is left: gone by the next look
            return False
        return bool(closed)

    DrainLoop(drained, drain.done, clock, 0.5).start(now=True)
    clock.pump([drainloop.SLOW] * 110)
    assert [t for t, late in drain.looks if late] == [0.5, 0.505]
    assert drain.ends == [(0.505, True)]


def test_stopping_calls_nothing_back_and_stops_looking():
    clock = task.Clock()
    drain = Drain(clock)
    loop = loop_for(drain)
    loop.stop()                               # never started: harmless
    loop.start(now=True)
    loop.stop()
    loop.stop()
    clock.advance(10)
    assert drain.looks == [(0.0, False)] and drain.ends == [] and not clock.getDelayedCalls()


def test_a_look_that_fails_is_logged_and_ends_the_loop():
    clock = task.Clock()

    def broken(late):
        raise ValueError("a look went wrong")

    loop = DrainLoop(broken, lambda late: None, clock, 1.0)
    with capturedLogs() as events:
        loop.start(now=True)
    assert [e["log_failure"].value.args for e in events if "log_failure" in e] == [("a look went wrong",)]
    assert not loop.running and not clock.getDelayedCalls()
