"""A read worker never outlives its main process (worker/lifeline.py, entry.py)."""

import os
import signal
import subprocess
import sys
import time

import pytest
from twisted.internet import task

from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.channel.scratch import OWNER_FILE, PREFIX
from namesrv.readworkers.worker import lifeline
from namesrv.readworkers.worker.lifeline import CHECK_INTERVAL, Lifeline

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_new_parent_is_noticed_at_the_next_check():
    clock, parent, lost = task.Clock(), [100], []
    line = Lifeline(100, lost.append, clock, getppid=lambda: parent[0])
    line.start()
    clock.advance(CHECK_INTERVAL * 3)
    assert lost == []
    parent[0] = 1   # re-parented to init: the main process died
    clock.advance(CHECK_INTERVAL)
    assert lost == ["the main process 100 is gone (parent now 1)"]
    clock.advance(CHECK_INTERVAL * 3)
    assert len(lost) == 1 and not clock.getDelayedCalls()


def test_a_parent_dead_before_the_first_check_is_noticed_at_once():
    """The main process may die between the fork and the prctl: the first check is immediate."""
    lost = []
    Lifeline(100, lost.append, task.Clock(), getppid=lambda: 1).start()
    assert lost and "100 is gone" in lost[0]


def test_lost_reports_once_whatever_says_it_first():
    clock, lost = task.Clock(), []
    line = Lifeline(100, lost.append, clock, getppid=lambda: 100)
    line.start()
    line.lost("the pipe to the main process broke")
    line.lost("again")
    assert lost == ["the pipe to the main process broke"] and not clock.getDelayedCalls()


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


GRANDCHILD = """
import signal, sys, time
from namesrv.readworkers.worker.lifeline import set_parent_death_signal
signal.signal(signal.SIGTERM, lambda *a: (open(sys.argv[1], "w").write("TERM"), sys.exit(0)))
assert set_parent_death_signal()
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)
"""
MIDDLE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[1]])
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")
def test_the_parent_death_signal_reaches_the_child_of_a_killed_process(tmp_path):
    """The prctl as a worker sets it: its parent is SIGKILLed, the child gets SIGTERM."""
    marker = tmp_path / "signal"
    middle = subprocess.Popen([sys.executable, "-c", MIDDLE, str(marker), GRANDCHILD], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=REPO))
    grandchild = int(middle.stdout.readline())
    try:
        assert wait_for(lambda: os.path.exists(str(marker) + ".ready"))
        middle.kill()
        middle.wait()
        # the handler creates the file and then writes it: wait for the word, not only the file
        assert wait_for(lambda: marker.exists() and marker.read_text() == "TERM"), \
            marker.read_text() if marker.exists() else "no signal"
    finally:
        middle.stdout.close()
        try:
            os.kill(grandchild, signal.SIGKILL)
        except OSError:
            pass


def orphan_directory(tmp_path):
    """A pool directory whose recorded owner is a process that has exited."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    directory = tmp_path / (PREFIX + "test")
    directory.mkdir()
    (directory / OWNER_FILE).write_text("%d 12345\n" % gone.pid)
    SharedGeneration(str(directory / "generation"), writable=True).close()
    return directory


def test_a_worker_whose_parent_is_not_the_one_named_exits_and_removes_the_dead_owners_directory(tmp_path):
    """--parent-pid names a process that is not our parent (it died before the worker ran): the
    worker exits by itself, and removes the pool directory of that dead owner."""
    directory = orphan_directory(tmp_path)
    worker = subprocess.Popen(
        [sys.executable, "-m", "namesrv.readworkers.worker", "--index", "0", "--port", "1",
         "--upstream", str(directory / "forward.sock"), "--generation", str(directory / "generation"),
         "--parent-pid", "1" if os.getpid() != 1 else "2"],
        cwd=str(directory), env=dict(os.environ, PYTHONPATH=REPO), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert worker.returncode == 0, err
    assert b"is gone" in err
    assert not directory.exists()


def test_a_worker_whose_stdout_reader_is_gone_exits(tmp_path):
    """The pipe to the main process breaks before its stdin ends (the main process died): exits."""
    directory = orphan_directory(tmp_path)
    read_end, write_end = os.pipe()
    worker = subprocess.Popen(
        [sys.executable, "-m", "namesrv.readworkers.worker", "--index", "0", "--port", "1",
         "--upstream", str(directory / "forward.sock"), "--generation", str(directory / "generation"),
         "--parent-pid", str(os.getpid())],
        cwd=str(directory), env=dict(os.environ, PYTHONPATH=REPO), stdin=subprocess.PIPE, stdout=write_end,
        stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        os.close(read_end)   # nobody reads the worker's stdout any more; its stdin stays open
        assert wait_for(lambda: worker.poll() is not None)
        err = worker.stderr.read()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert b"pipe to the main process broke" in err, err
    worker.stdin.close()
    worker.stderr.close()


def test_the_parent_pid_is_read_before_argparse():
    from namesrv.readworkers.worker.lifeline import parent_pid_argument
    assert parent_pid_argument(["--index", "0", "--parent-pid", "42", "--port", "1"]) == 42
    assert parent_pid_argument(["--parent-pid=43"]) == 43
    assert parent_pid_argument(["--index", "0"]) is None
    assert parent_pid_argument(["--parent-pid"]) is None
