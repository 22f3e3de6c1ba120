"""Ending a child process and reading its log: what every harness that starts a server needs
(the benchmarks' servers, Prometheus in the monitoring tests, the fault lab's members)."""

import os
import signal
import subprocess
import time


def stop(process, sig=signal.SIGTERM, timeout=20.0):
    """Send ``sig`` to a running ``process`` (a Popen), wait up to ``timeout`` s, then kill it; returns
    its exit code (None for no process)."""
    if process is None:
        return None
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def wait_for(predicate, within, what, every=0.2, error=TimeoutError):
    """Poll ``predicate()`` every ``every`` s until it returns something true (returned); past ``within`` s,
    raise ``error`` naming ``what``."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise error("%s: not within %s s" % (what, within))
        time.sleep(every)


def read_log(path, tail=None):
    """The text of a log file (its last ``tail`` characters), or "" when there is none."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    return text[-tail:] if tail else text


def group_members(pgid):
    """The pids of process group ``pgid`` still running (a zombie, ended and not yet reaped, is not one)."""
    members = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                state, _, group = f.read().rpartition(")")[2].split()[:3]
        except OSError:
            continue
        if group == str(pgid) and state != "Z":
            members.append(int(pid))
    return members
