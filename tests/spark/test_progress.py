"""The progress line (terminal only) and the closing summary line, with a fake status tracker."""

import io
import os
import re
import subprocess
import sys
import time
from types import SimpleNamespace

from spark import progress, report
from tests.fakes import FakeStatusTracker

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVENTLOG = os.path.join(REPO, "tests", "data", "eventlog")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def fake_spark(tracker):
    return SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))


def test_off_a_terminal_or_quiet_nothing_is_drawn():
    tracker = FakeStatusTracker()
    assert isinstance(progress.for_command_line(fake_spark(tracker), report.PHASES, False, io.StringIO()),
                      progress.NoProgress)
    assert isinstance(progress.for_command_line(fake_spark(tracker), report.PHASES, True, Terminal()),
                      progress.NoProgress)


def test_the_line_names_the_report_and_sparks_job_and_stage():
    tracker, stream, now = FakeStatusTracker(), Terminal(), [100.0]
    shown = progress.TerminalProgress(fake_spark(tracker), report.PHASES, stream, interval=3600,
                                      clock=lambda: now[0])
    try:
        assert isinstance(progress.for_command_line(fake_spark(tracker), report.PHASES, False, stream),
                          progress.TerminalProgress)
        tracker.jobs, tracker.stages = [7], {12: (3, 8)}
        now[0] = 142.0
        shown.phase("tables")
        last = stream.getvalue().split("\r")[-1]
        assert last.startswith("[3/%d] tables" % len(report.PHASES))
        assert "42s" in last and "job 7 stage 12: 3/8 tasks" in last
        tracker.jobs, tracker.stages = [], {}
        shown.phase("charts and html")
        drawn = stream.getvalue().split("\r")
        last = drawn[-1]
        assert last.startswith("[6/6] charts and html") and "job" not in last
        assert len(last) == len(drawn[-2]) > len(last.rstrip())   # blanks out the longer previous line
    finally:
        shown.close()
    assert stream.getvalue().endswith("\r")


def test_summary_line():
    summary = {"lines": {"json": 90, "java": 8, "malformed": 2}, "seconds": 12.34, "output": "/r/out/"}
    assert progress.summary_line(summary) == "100 rows read, 2 malformed, 12.3 s; report: /r/out/report.html"
    summary["jobs"] = 9
    assert progress.summary_line(summary) == ("100 rows read, 2 malformed, 12.3 s, 9 Spark jobs; "
                                              "report: /r/out/report.html")


def test_summary_line_of_the_command_line_gives_the_whole_run():
    summary = {"lines": {"json": 100}, "seconds": 18.94, "session_seconds": 7.2, "total_seconds": 44.0, "jobs": 4,
               "output": "/r/out"}
    assert progress.summary_line(summary) == ("100 rows read, 0 malformed, 44.0 s in all (Spark's start 7.2 s, the "
                                              "report 18.9 s), 4 Spark jobs; report: /r/out/report.html")


def test_process_seconds_counts_from_the_process_start():
    """What ``time`` would say of this process so far: at least the time this test process has run."""
    lived = progress.process_seconds()
    assert lived is not None and lived >= time.process_time() - 0.1


def test_the_closing_line_counts_the_whole_command(tmp_path):
    """Issue 39: the line said 18.9 s of a 44 s run (the JVM's start and exit were left out). The command's
    own figure is now within a few seconds of its lifetime as its parent sees it, not a fraction of it."""
    out = str(tmp_path / "out")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "spark.report", "--input", EVENTLOG, "--output", out,
                           "--no-class-cache"], cwd=REPO, capture_output=True, text=True, timeout=600)
    lifetime = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    total = float(re.search(r", ([0-9.]+) s in all \(Spark's start ([0-9.]+) s, the report ([0-9.]+) s\)", last)
                  .group(1))
    assert lifetime - 3.0 <= total <= lifetime + 0.5, (total, lifetime, last)
    assert last.endswith("; report: %s/report.html" % out)


def test_total_jobs_adds_the_phases_and_says_when_it_cannot():
    assert progress.total_jobs([{"jobs": 1}, {"jobs": 3}, {"jobs": 0}]) == 4
    assert progress.total_jobs([{"jobs": 1}, {"jobs": None}]) is None


def test_phase_times_count_seconds_and_jobs_per_phase():
    tracker, now = FakeStatusTracker(), [0.0]
    shown = []
    display = SimpleNamespace(phase=shown.append)
    times = progress.PhaseTimes(fake_spark(tracker), display, clock=lambda: now[0])
    times.phase("staging")
    tracker.all_jobs, now[0] = [0], 40.0
    times.phase("liveness")
    tracker.all_jobs, now[0] = [0, 1, 2, 3], 55.5
    assert times.finish() == [{"phase": "staging", "seconds": 40.0, "jobs": 1},
                              {"phase": "liveness", "seconds": 15.5, "jobs": 3}]
    assert shown == ["staging", "liveness"]


def test_phase_times_wait_for_the_listener_bus_before_counting_jobs():
    """The status tracker hears of a job through Spark's listener bus, after the action returned: a phase
    is closed only once the bus has delivered what was posted, so its last job is not counted in the next."""
    tracker, events = FakeStatusTracker(), []

    class Bus:
        def waitUntilEmpty(self, timeout_ms):
            events.append("settled")
            tracker.all_jobs = tracker.all_jobs + [len(tracker.all_jobs)]   # the job it had not yet heard of

    context = SimpleNamespace(statusTracker=lambda: tracker,
                              _jsc=SimpleNamespace(sc=lambda: SimpleNamespace(listenerBus=lambda: Bus())))
    times = progress.PhaseTimes(SimpleNamespace(sparkContext=context), SimpleNamespace(phase=lambda name: None),
                                clock=lambda: 0.0)
    times.phase("staging")
    times.phase("tables")
    assert times.finish() == [{"phase": "staging", "seconds": 0.0, "jobs": 1},
                              {"phase": "tables", "seconds": 0.0, "jobs": 1}]
    assert events == ["settled"] * 4
