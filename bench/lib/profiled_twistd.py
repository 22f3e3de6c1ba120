"""``python -m bench.lib.profiled_twistd STATS_FILE <twistd arguments>``: twistd with measurement switches.

- SIGUSR1 starts cProfile on the reactor (main) thread;
- SIGUSR2 stops it, dumps the stats to STATS_FILE and the garbage collector's pauses
  since the previous SIGUSR2 (or the start) to ``STATS_FILE.gc.json``, then touches
  ``STATS_FILE.done``. Sent without SIGUSR1 first, it is a GC-only reading.

Until SIGUSR1 nothing is profiled, so the same server serves the unprofiled benchmarks;
the GC hook costs two clock readings per collection. twistd leaves SIGUSR1 alone when a
handler is already installed, and uses SIGUSR2 only with --debug.
"""

import cProfile
import gc
import json
import signal
import sys
import time


class GcPauses:
    """Per generation: collections, total and longest pause (seconds) since the last ``take``."""

    def __init__(self):
        self._started = None
        self.reset()
        gc.callbacks.append(self._callback)

    def reset(self):
        self.count = [0, 0, 0]
        self.total = [0.0, 0.0, 0.0]
        self.longest = [0.0, 0.0, 0.0]
        self.since = time.monotonic()

    def _callback(self, phase, info):
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            pause = time.perf_counter() - self._started
            generation = info.get("generation", 0)
            self.count[generation] += 1
            self.total[generation] += pause
            self.longest[generation] = max(self.longest[generation], pause)
            self._started = None

    def take(self):
        reading = {"seconds": time.monotonic() - self.since, "count": self.count, "total_s": self.total,
                   "longest_s": self.longest, "tracked_objects": len(gc.get_objects())}
        self.reset()
        return reading


def main():
    stats_file = sys.argv[1]
    sys.argv = ["twistd"] + sys.argv[2:]
    profiler = cProfile.Profile()
    pauses = GcPauses()

    def start(signum, frame):
        profiler.enable()

    def stop(signum, frame):
        profiler.disable()
        profiler.dump_stats(stats_file)
        with open(stats_file + ".gc.json", "w") as f:
            json.dump(pauses.take(), f)
        open(stats_file + ".done", "w").close()

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from twisted.scripts.twistd import run
    run()


if __name__ == "__main__":
    main()
