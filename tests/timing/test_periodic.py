"""A timer as a child service: first call after its delay, then every interval; restart and stop. A loop
that looks often at first, then less often."""

from twisted.application import service
from twisted.internet import task

from namesrv.timing.periodic import EasingLoop, PeriodicCall


def test_first_call_after_the_delay_then_every_interval_and_nothing_after_stop():
    clock, calls, interval = task.Clock(), [], [10.0]
    parent = service.MultiService()
    timer = PeriodicCall("scan", lambda: calls.append(clock.seconds()), lambda: interval[0], 5, clock)
    timer.setServiceParent(parent)
    parent.startService()
    clock.advance(4.9)
    assert calls == []
    clock.pump([0.1, 10, 10])
    assert calls == [5.0, 15.0, 25.0]
    interval[0] = 2.0
    timer.restart()                      # the new interval from now on, no extra call now
    clock.pump([2, 2])
    assert calls == [5.0, 15.0, 25.0, 27.0, 29.0]
    parent.stopService()
    clock.advance(100)
    assert calls[-1] == 29.0 and not timer.looping


def test_a_restart_while_a_call_waits_on_its_deferred_leaves_one_loop():
    """A route snapshot being written when UPDATE_NAMESRV_CONFIG changes routeSnapshotInterval: restarting that
    LoopingCall itself would leave a second loop scheduled once the write ends."""
    from twisted.internet import defer
    clock, calls, pending, interval = task.Clock(), [], [], [10.0]

    def save():
        calls.append(clock.seconds())
        if not pending:                  # the first write is slow; the later ones end at once
            pending.append(defer.Deferred())
            return pending[0]
        return None

    timer = PeriodicCall("route snapshot", save, lambda: interval[0], 1, clock)
    timer.startService()
    clock.advance(1)
    assert calls == [1.0]
    interval[0] = 5.0
    timer.restart()
    pending[0].callback(None)            # the write that was running ends
    clock.pump([5] * 4)
    assert calls == [1.0, 6.0, 11.0, 16.0, 21.0]
    timer.stopService()


def test_stopped_before_its_first_call_never_calls():
    clock, calls = task.Clock(), []
    timer = PeriodicCall("print", lambda: calls.append(1), lambda: 1.0, 60, clock)
    timer.startService()
    clock.advance(30)
    timer.stopService()
    clock.advance(100)
    assert calls == [] and not clock.getDelayedCalls()


def test_an_easing_loop_looks_quickly_for_its_first_calls_then_slowly_until_stopped():
    clock, calls = task.Clock(), []

    def look():
        calls.append(round(clock.seconds(), 3))
        if len(calls) == 6:
            loop.stop()

    loop = EasingLoop(look, clock, quick=0.001, slow=0.005, quick_calls=3)
    loop.start(now=False)
    assert calls == [] and loop.running
    clock.pump([0.001] * 13)
    # after the third look, one every 5 ms (on LoopingCall's grid from the start)
    assert calls == [0.001, 0.002, 0.003, 0.005, 0.010]
    clock.pump([0.001] * 5)
    assert calls[5:] == [0.015] and not loop.running and loop.calls == 6
