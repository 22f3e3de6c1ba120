"""Warnings that a flood of bad peers cannot turn into a flood of log lines."""

import time
from typing import Callable, Optional

from twisted.logger import Logger


class RateLimitedWarning:
    """At most ``limit`` lines per ``window`` seconds; then one line saying how many were left out.

    Each bad peer is still counted (metrics, event log) by the caller: only the text log is
    thinned, so a storm of 100,000 malformed connections costs a few dozen lines.
    """

    def __init__(self, log: Optional[Logger] = None, limit: int = 20, window: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log or Logger()
        self.limit = limit
        self.window = window
        self.clock = clock
        self._window_start: Optional[float] = None
        self._logged = 0
        self._suppressed = 0

    def warn(self, format: str, **fields: object) -> bool:
        now = self.clock()
        start = self._window_start
        if start is None or now - start >= self.window:
            if self._suppressed and start is not None:   # nothing is left out before the first window
                self.log.warn("{n} more such warnings were left out in the last {s:.0f}s",
                              n=self._suppressed, s=now - start)
            self._window_start = now
            self._logged = 0
            self._suppressed = 0
        if self._logged < self.limit:
            self._logged += 1
            self.log.warn(format, **fields)
            return True
        self._suppressed += 1
        return False
