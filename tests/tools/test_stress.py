"""The stress runner (tools/stress): a test that fails in one run of several is reported with that run and
its kept log, a run that fails as a whole is not lost, and Ctrl-C ends the series with its load and
everything its suite started."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

from tests import leftovers
from tests.integration.server import REPO
from tools.stress.report import Report, read_junit

SUITE = '''
import os, time

def test_steady():
    pass

def test_fails_in_the_second_run():
    assert not os.environ["NAMESRV_STRESS_RUN"].startswith("2-"), "the second run"

def test_waits_when_asked():
    if os.environ.get("STRESS_TEST_WAIT"):
        print("waiting", flush=True)
        time.sleep(60)
'''


def runner(tmp_path, *args, env=None, pytest_args=(), **popen):
    (tmp_path / "suite").mkdir(exist_ok=True)
    (tmp_path / "suite" / "test_suite.py").write_text(SUITE)
    command = [sys.executable, "-m", "tools.stress", "--keep", str(tmp_path / "keep"), *args, "--",
               str(tmp_path / "suite"), "-p", "no:cacheprovider", *pytest_args]
    return subprocess.Popen(command, cwd=REPO, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **popen)


def test_a_test_that_failed_once_is_reported_with_its_run_and_log(tmp_path):
    process = runner(tmp_path, "--runs", "3", "--cpu", "1", "--disk", "--results", str(tmp_path / "kept.txt"))
    output = process.communicate(timeout=300)[0]
    assert process.returncode == 1, output
    report = json.loads((tmp_path / "keep" / "report.json").read_text())
    assert report["runs_passed"] == 2 and [r["status"] for r in report["runs"]] == [0, 1, 0]
    (failed,) = report["failures"]
    assert failed.endswith("test_suite.py::test_fails_in_the_second_run")
    assert report["failures"][failed]["runs"] == [2] and "the second run" in report["failures"][failed]["message"]
    log = (tmp_path / "keep" / "run-02" / "output.txt").read_text()
    assert "FAILED" in log and "test_fails_in_the_second_run" in log
    assert "PASSED" in (tmp_path / "keep" / "run-01" / "output.txt").read_text()   # -rA: every outcome
    assert "failed in 1 of 3 run(s) (2); logs: run-02/output.txt" in (tmp_path / "kept.txt").read_text()
    assert "1 busy CPU process(es) and a disk writer" in report["load"]


def test_ctrl_c_ends_the_series_its_suite_and_its_load(tmp_path):
    value = uuid.uuid4().hex
    process = runner(tmp_path, "--runs", "5", "--cpu", "1", "--disk", "--grace", "20",
                     env={"STRESS_TEST_WAIT": "1", "STRESS_TEST_OWNER": value}, pytest_args=["-s"])
    try:
        output = tmp_path / "keep" / "run-01" / "output.txt"
        deadline = time.monotonic() + 120
        while not (output.exists() and "waiting" in output.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        mine = lambda: {pid for pid in leftovers.live_pids() if pid != process.pid and   # noqa: E731
                        leftovers.carries(pid, value, marker="STRESS_TEST_OWNER")}
        assert len(mine()) >= 3    # the suite, a CPU burner, the disk writer
        process.send_signal(signal.SIGINT)
        text = process.communicate(timeout=60)[0]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, text
    assert "stopped by SIGINT" in text
    assert leftovers.wait_gone(mine, grace=10) == set()
    report = json.loads((tmp_path / "keep" / "report.json").read_text())
    assert len(report["runs"]) == 1 and report["runs"][0]["status"] == "stopped"
    scratch = report["load"].rpartition(" in ")[2].rstrip(")")
    assert scratch.startswith("/") and not os.path.exists(scratch)   # the disk writer's directory is removed


def test_a_failure_in_teardown_counts_once_as_failed(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite><testcase classname="tests.x.test_a" name="test_b" file="tests/x/test_a.py"/>'
                     '<testcase classname="tests.x.test_a" name="test_b" file="tests/x/test_a.py">'
                     '<error message="error at teardown">trace</error></testcase>'
                     '<testcase classname="tests.x.test_a.TestC" name="test_d[1]" file="tests/x/test_a.py">'
                     '<skipped message="no chromium"/></testcase></testsuite></testsuites>')
    outcomes, messages = read_junit(str(junit))
    assert outcomes == {"tests/x/test_a.py::test_b": "error", "tests/x/test_a.py::TestC::test_d[1]": "skipped"}
    assert messages["tests/x/test_a.py::test_b"].startswith("error at teardown")


def test_a_run_the_series_was_stopped_in_is_not_counted_as_failed(tmp_path):
    """Stopping a long series on purpose (Ctrl-C, SIGTERM) must not read as a failure of the suite."""
    first = tmp_path / "run-01"
    first.mkdir()
    (first / "junit.xml").write_text('<testsuites><testsuite><testcase classname="tests.x.test_a" name="test_b" '
                                     'file="tests/x/test_a.py"/></testsuite></testsuites>')
    report = Report(str(tmp_path), "pytest", "no load", "now")
    report.add_run(1, 0, 10.0, str(first))
    report.add_run(2, "stopped", 0.0, str(tmp_path / "run-02"), "stopped by SIGTERM")
    assert report.failures == {} and report.passed
    assert report.as_dict()["runs_passed"] == 1
    text = report.text()
    assert "run 02: stopped by SIGTERM, not counted" in text
    assert "no test failed in 1 complete run(s)" in text and "failed at least once" not in text
