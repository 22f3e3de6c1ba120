"""A monotonic IReactorTime-like clock for broker liveness.

The reactor's ``seconds()`` is wall time: a clock jump forwards would expire every
broker at once, a jump backwards would keep dead ones alive. Liveness only needs
intervals, so it reads ``time.monotonic``. Tests pass a ``task.Clock`` instead.
"""

import time


class MonotonicClock:
    def seconds(self) -> float:
        return time.monotonic()
