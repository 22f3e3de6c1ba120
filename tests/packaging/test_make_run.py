"""`make run` as the README has a new user type it, on a copy of the checkout with a venv of its own.

It installs only what running needs (no test extras: the venv stays far below the 953 MB it was),
serves, `namesrv-admin` works from the venv as the README writes it, and Ctrl-C (SIGINT to the
whole foreground process group, as a terminal sends it) or SIGTERM stops it with no make error.
"""

import os
import shutil
import signal
import subprocess
import time

import pytest

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from tests.integration.server import free_port
from tests.packaging.checkout import copy_checkout
from tools.processes import group_members


MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")

#: the issue's target for the venv `make run` makes
MAX_VENV_MB = 150


def venv_megabytes(path):
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total / 1e6


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    base, tree = copy_checkout(tmp_path_factory, "make-run", "checkout")
    home = base / "home"
    home.mkdir()
    return tree, home


def _as_a_terminal_starts_it():
    """A shell's foreground job gets Ctrl-C (SIGINT) at its default, whatever ran pytest: a pytest started
    in the background by a shell without job control ignores SIGINT, its children inherit that, and
    twistd then keeps running after Ctrl-C (Twisted leaves an ignored SIGINT alone)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(tree, home):
    port, status_port = free_port(), free_port()
    env = dict(os.environ, HOME=str(home), PYTHONFAULTHANDLER="1")   # a hang names itself (ended_within)
    env.pop("PYTHONPATH", None)
    env.pop("MAKEFLAGS", None)
    process = subprocess.Popen([MAKE, "run", "ARGS=--listenPort %d" % port, "STATUS_PORT=%d" % status_port],
                               cwd=str(tree), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, preexec_fn=_as_a_terminal_starts_it)
    deadline = time.monotonic() + 600
    while True:
        try:
            with BlockingRemotingClient("127.0.0.1", port, timeout=5) as client:
                assert client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO)).code == 0
            return process, port
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.communicate()[0] if process.poll() is not None else ""
                stop_group(process)
                raise AssertionError("make run did not serve:\n" + output[-5000:])
            time.sleep(0.2)


def ended_within(process, seconds):
    """``process``'s output once it has ended; one that is still running after ``seconds`` fails the test
    with what its group was doing: each process's state, and the Python stacks of those aborted (SIGABRT:
    faulthandler prints every thread's stack to the output)."""
    try:
        return process.communicate(timeout=seconds)[0]
    except subprocess.TimeoutExpired:
        states = subprocess.run(["ps", "-g", str(process.pid), "-o", "pid,ppid,stat,wchan:24,etime,args"],
                                capture_output=True, text=True).stdout
        for pid in group_members(process.pid):
            if pid != process.pid:
                try:
                    os.kill(pid, signal.SIGABRT)
                except ProcessLookupError:
                    pass
        try:
            output = process.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            stop_group(process)
            output = process.communicate()[0]
        raise AssertionError("not ended %d s after the signal; the group was:\n%s\noutput:\n%s"
                             % (seconds, states, output[-12000:]))


def stop_group(process):
    for pid in group_members(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def test_make_run_is_lean_serves_and_stops_on_ctrl_c_without_a_make_error(checkout):
    tree, home = checkout
    process, port = start(tree, home)
    try:
        venv = tree / ".venv"
        python = str(venv / "bin" / "python")
        for extra in ("pytest", "pyspark", "hypothesis"):
            assert subprocess.run([python, "-c", "import %s" % extra], capture_output=True).returncode != 0, extra
        assert venv_megabytes(venv) < MAX_VENV_MB
        listed = subprocess.run([str(venv / "bin" / "namesrv-admin"), "-n", "127.0.0.1:%d" % port, "clusterList"],
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and listed.stdout.startswith("#Cluster Name"), listed
        os.killpg(process.pid, signal.SIGINT)   # Ctrl-C: the terminal signals the whole foreground group
        output = ended_within(process, 60)
    finally:
        if process.poll() is None:
            stop_group(process)
    assert process.returncode in (0, -signal.SIGINT), output[-3000:]   # make re-raises SIGINT: no message
    assert "make: ***" not in output and "Traceback" not in output, output[-3000:]
    assert "Server Shut Down." in output
    assert group_members(process.pid) == []


def test_sigterm_to_the_server_ends_make_run_without_a_make_error(checkout):
    tree, home = checkout
    process, port = start(tree, home)   # installed already: nothing changed since
    try:
        (twistd,) = [pid for pid in group_members(process.pid)
                     if b"twistd" in open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0")[1]]
        os.kill(twistd, signal.SIGTERM)
        output = ended_within(process, 60)
    finally:
        if process.poll() is None:
            stop_group(process)
    assert process.returncode == 0 and "make: ***" not in output, output[-3000:]
    assert "pip install" not in output   # no source changed: not installed again
