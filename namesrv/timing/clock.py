"""A monotonic IReactorTime-like clock for broker liveness.

The reactor's ``seconds()`` is wall time: a clock jump forwards would expire every
broker at once, a jump backwards would keep dead ones alive. Liveness only needs
intervals, so it reads ``time.monotonic``. Tests pass a ``task.Clock`` instead.
"""

import time
from typing import Protocol


class Clock(Protocol):
    """What reads the time needs of a clock: a MonotonicClock, a ``task.Clock``, a reactor."""

    def seconds(self) -> float: ...


class MonotonicClock:
    def seconds(self) -> float:
        return time.monotonic()
