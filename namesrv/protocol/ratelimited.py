"""Warnings that a flood of bad peers cannot turn into a flood of log lines."""

import time

from twisted.logger import Logger


class RateLimitedWarning:
    """At most ``limit`` lines per ``window`` seconds; then one line saying how many were left out.

    Each bad peer is still counted (metrics, event log) by the caller: only the text log is
    thinned, so a storm of 100,000 malformed connections costs a few dozen lines.
    """

    def __init__(self, log=None, limit=20, window=10.0, clock=time.monotonic):
        self.log = log or Logger()
        self.limit = limit
        self.window = window
        self.clock = clock
        self._window_start = None
        self._logged = 0
        self._suppressed = 0

    def warn(self, format, **fields):
        now = self.clock()
        if self._window_start is None or now - self._window_start >= self.window:
            if self._suppressed:
                self.log.warn("{n} more such warnings were left out in the last {s:.0f}s",
                              n=self._suppressed, s=now - self._window_start)
            self._window_start = now
            self._logged = 0
            self._suppressed = 0
        if self._logged < self.limit:
            self._logged += 1
            self.log.warn(format, **fields)
            return True
        self._suppressed += 1
        return False
