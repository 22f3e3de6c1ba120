"""Draw a report's charts in worker processes, while the driver has nothing else to do.

Drawing is the one part of a report that is all Python: eleven PNGs, 2.4-4 s of one core (matplotlib's
text layout and PNG encoding) at the end of a run, while the JVM waits. Two workers draw them in half
the time on a 2-core machine. They are started with the report, so that their matplotlib import
happens while the JVM starts, and then wait for their share of the charts on a pipe.

A worker is a plain ``python -c`` child (``serve``), not a ``multiprocessing`` one: spawned
``multiprocessing`` children re-run the parent's main module, and the spark-submit launcher's main module
is the report itself. The parent's ``sys.path`` is handed down, so the package is found wherever the
driver found it (a checkout, an installed wheel, spark-submit's ``--py-files`` zip).

A worker dies with its pipe: it exits on end of input, so a driver that is killed leaves none behind.
Charts that a worker could not draw (it died, or failed) are drawn by the driver itself.
"""

import os
import pickle
import subprocess
import sys

#: Workers for a report: one per core, at most this many (eleven charts of 0.1-0.5 s each).
MAX_WORKERS = 2
#: Relative cost of a chart function (time series lay out more ticks and text): the shares are balanced by it.
COST = {"series": 3, "sessions": 3, "bars": 2}

_SERVE = "from spark.chartworkers import serve; serve()"


def default_workers():
    """Worker processes for this machine: none on one core (the driver draws), else up to ``MAX_WORKERS``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(MAX_WORKERS, cores) if cores > 1 else 0


def draw_here(calls):
    """Draw ``calls`` ([(function name in ``spark.charts``, args, kwargs)]) in this process."""
    from spark import charts
    for name, args, kwargs in calls:
        getattr(charts, name)(*args, **kwargs)


def shares(calls, count):
    """``calls`` split into ``count`` lists of about equal cost (the most costly first, each to the lightest share)."""
    out = [[] for _ in range(count)]
    load = [0] * count
    for call in sorted(calls, key=lambda c: -COST.get(c[0], 1)):
        i = load.index(min(load))
        out[i].append(call)
        load[i] += COST.get(call[0], 1)
    return out


class ChartWorkers:
    """``count`` drawing processes, started now; ``draw(calls)`` once, then ``close()`` (or use ``with``)."""

    def __init__(self, count=None):
        count = default_workers() if count is None else count
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._procs = []
        for _ in range(count):
            try:
                self._procs.append(subprocess.Popen([sys.executable, "-c", _SERVE], stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE, env=env))
            except OSError:
                break   # no more processes: the driver draws what the others do not

    @property
    def count(self):
        return len(self._procs)

    def draw(self, calls):
        """Draw every call; returns how many the workers drew (the rest were drawn here)."""
        calls = list(calls)
        if not self._procs:
            draw_here(calls)
            return 0
        parts = shares(calls, len(self._procs))
        sent = []
        for proc, part in zip(self._procs, parts):
            try:
                pickle.dump(part, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.close()
                sent.append((proc, part))
            except (OSError, ValueError):
                draw_here(part)
        drawn = 0
        for proc, part in sent:
            try:
                done = pickle.load(proc.stdout)
            except Exception:  # noqa: BLE001 - a worker that died or wrote garbage: its charts are drawn here
                done = None
            if done == len(part):
                drawn += done
            else:
                draw_here(part)
        return drawn

    def close(self):
        for proc in self._procs:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


#: Niceness a worker adds to its own: its import runs while the JVM starts, and must take only what the JVM
#: leaves (at the same priority the session started 0.5-1 s later on 2 cores).
NICENESS = 10


def _lower_priority():
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):
        pass


def serve(stdin=None, stdout=None):
    """A worker: import the charts, read one list of calls, draw them, answer how many were drawn."""
    stdin = stdin or sys.stdin.buffer
    if stdout is None:   # a worker process (not a test's call)
        stdout = sys.stdout.buffer
        sys.stdout = sys.stderr   # nothing a library prints may end up in the answer
        _lower_priority()
    from spark import charts  # noqa: F401 - the import is what the worker does while the JVM starts
    try:
        calls = pickle.load(stdin)
    except EOFError:
        return   # closed without work: the report ended before its charts
    draw_here(calls)
    pickle.dump(len(calls), stdout)
    stdout.flush()
