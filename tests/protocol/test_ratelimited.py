"""A flood of bad frames is counted in full but logged in a few lines."""

from twisted.internet import task
from twisted.logger import Logger, LogLevel

from namesrv.protocol.ratelimited import RateLimitedWarning


class Lines:
    def __init__(self):
        self.events = []

    def __call__(self, event):
        self.events.append(event)


def make(limit=3, window=10.0):
    clock = task.Clock()
    lines = Lines()
    return RateLimitedWarning(Logger(observer=lines), limit=limit, window=window, clock=clock.seconds), clock, lines


def test_lines_beyond_the_limit_are_left_out_and_counted():
    warnings, clock, lines = make()
    results = [warnings.warn("bad frame from {peer}", peer=i) for i in range(10)]
    assert results == [True] * 3 + [False] * 7
    assert [e["peer"] for e in lines.events] == [0, 1, 2]
    clock.advance(10)
    assert warnings.warn("bad frame from {peer}", peer=99)
    summary, again = lines.events[3:]
    assert summary["n"] == 7 and summary["log_level"] == LogLevel.warn
    assert again["peer"] == 99


def test_a_quiet_window_adds_no_summary():
    warnings, clock, lines = make()
    warnings.warn("one")
    clock.advance(30)
    warnings.warn("two")
    assert [e["log_format"] for e in lines.events] == ["one", "two"]
