"""What a long report run shows while it works, and the line it ends with.

On a terminal, one status line is redrawn in place about twice a second: the report being built
(``[4/9] heartbeat``), the elapsed time, and Spark's active job and stage with their task counts, read
from ``SparkContext.statusTracker()`` (Spark's own console bar needs the web UI, which local sessions
turn off). Off a terminal, or with ``--quiet``, nothing is drawn: logs and CI output stay clean.

The poller is a daemon thread on the driver that only reads the status tracker; the reports never wait
for it.
"""

import os
import sys
import threading
import time


def status_text(tracker):
    """``job 12 stage 31: 3/8 tasks`` for the active stages (empty when Spark is idle)."""
    parts = []
    for stage_id in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            parts.append("stage %d: %d/%d tasks" % (stage_id, info.numCompletedTasks, info.numTasks))
    jobs = sorted(tracker.getActiveJobsIds())
    if not jobs:
        return ""
    return "job %s %s" % (",".join(str(j) for j in jobs), ", ".join(parts))


class NoProgress:
    """Progress that shows nothing (off a terminal, ``--quiet``, or a library call)."""

    def phase(self, name):
        pass

    def close(self):
        pass


class TerminalProgress:
    """The redrawn status line on ``stream`` (a TTY); ``phase`` names the report being built."""

    def __init__(self, spark, phases, stream=None, interval=0.5, clock=time.monotonic):
        self.tracker = spark.sparkContext.statusTracker()
        self.phases = list(phases)
        self.stream = stream or sys.stderr
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.current = ""
        self._width = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="report-progress", daemon=True)
        self._thread.start()

    def phase(self, name):
        self.current = name
        self.draw()

    def line(self):
        number = self.phases.index(self.current) + 1 if self.current in self.phases else 0
        where = "[%d/%d] %s" % (number, len(self.phases), self.current) if number else self.current
        try:
            spark_status = status_text(self.tracker)
        except Exception:  # noqa: BLE001 - a stopped context while closing: show no Spark status
            spark_status = ""
        return "%s  %5.0fs  %s" % (where, self.clock() - self.started, spark_status)

    def draw(self):
        text = self.line()[:160]
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.draw()

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)
        self.stream.write("\r" + " " * self._width + "\r")
        self.stream.flush()


def for_command_line(spark, phases, quiet, stream=None):
    """TerminalProgress when ``stream`` (stderr) is a terminal and not ``quiet``, else NoProgress."""
    stream = stream or sys.stderr
    if quiet or not stream.isatty():
        return NoProgress()
    return TerminalProgress(spark, phases, stream)


def summary_line(summary):
    """The run's last line: rows read, malformed lines, wall time, Spark jobs and where the report is.

    With ``total_seconds`` (the command line's: from the process's start to this line, the JVM's
    start and exit included), that is the time given, with the JVM's start and the report's own
    time in brackets; ``seconds`` alone (a report run in a session someone else started) is the report's."""
    lines = summary["lines"]
    jobs = "" if summary.get("jobs") is None else ", %d Spark jobs" % summary["jobs"]
    if summary.get("total_seconds") is not None:
        parts = ["the report %.1f s" % summary["seconds"]]
        if summary.get("session_seconds") is not None:
            parts.insert(0, "Spark's start %.1f s" % summary["session_seconds"])
        took = "%.1f s in all (%s)" % (summary["total_seconds"], ", ".join(parts))
    else:
        took = "%.1f s" % summary["seconds"]
    return "%d rows read, %d malformed, %s%s; report: %s" % (
        sum(lines.values()), lines.get("malformed", 0), took, jobs, summary["output"].rstrip("/") + "/report.html")


def process_seconds(fallback_started=None):
    """Seconds since this process started (Linux: /proc/self/stat), as ``time`` would count the command;
    elsewhere since ``fallback_started`` (a ``time.time()``)."""
    try:
        with open("/proc/self/stat") as f:
            started_ticks = int(f.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return round(max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK")), 1)
    except (OSError, ValueError, IndexError):
        return None if fallback_started is None else round(time.time() - fallback_started, 1)


def total_jobs(phases):
    """Spark jobs of a whole run from ``PhaseTimes.finish``'s rows (None if the tracker could not tell)."""
    counts = [row["jobs"] for row in phases]
    return None if not counts or None in counts else sum(counts)


#: How long a phase change waits for Spark's listener bus (it is empty within milliseconds when no job runs).
SETTLE_MS = 1000


def listener_bus_settler(spark, timeout_ms=SETTLE_MS):
    """A call that waits until Spark's listener bus has delivered what was posted, at most ``timeout_ms``.

    The status tracker learns of a job from that bus, after the action that ran it has returned: counted
    right away, a phase's last job could be counted in the next phase. A no-op where the bus cannot be
    reached."""
    try:
        bus = spark.sparkContext._jsc.sc().listenerBus()
    except Exception:  # noqa: BLE001 - not a JVM-backed context: nothing to wait for
        return lambda: None

    def settle():
        try:
            bus.waitUntilEmpty(timeout_ms)
        except Exception:  # noqa: BLE001 - still busy after the timeout: count what is known
            pass
    return settle


class PhaseTimes:
    """Wall seconds and Spark jobs per phase of a run (the summary's ``phases``: a built-in profile).

    Forwards each phase to the progress display. Jobs are counted from the status tracker's job ids, so
    the figure includes the small jobs (listing, schema, collects) as well as the big ones.
    """

    def __init__(self, spark, display=None, clock=time.monotonic):
        self.tracker = spark.sparkContext.statusTracker()
        self.settle = listener_bus_settler(spark)
        self.display = display or NoProgress()
        self.clock = clock
        self.rows = []
        self._current = None

    def _jobs(self):
        self.settle()
        try:
            return len(self.tracker.getJobIdsForGroup(None))
        except Exception:  # noqa: BLE001 - a tracker that cannot answer leaves the count out
            return None

    def _close_current(self):
        if self._current is not None:
            name, started, jobs = self._current
            now_jobs = self._jobs()
            self.rows.append({"phase": name, "seconds": round(self.clock() - started, 2),
                              "jobs": None if jobs is None or now_jobs is None else now_jobs - jobs})

    def phase(self, name):
        self._close_current()
        self._current = (name, self.clock(), self._jobs())
        self.display.phase(name)

    def finish(self):
        self._close_current()
        self._current = None
        return self.rows
