"""Nothing a test started may outlive the test run: a session-wide check, and the same check
for a whole checkout (``.ci/run``).

The session marks itself: at its start it puts ``NAMESRV_TEST_SESSION=<unique value>`` into its
environment, which every process it starts inherits (servers, read workers, Spark's JVMs,
chromium and all their children), also one re-parented to init by a crash. At its end, once
every fixture is torn down, any live process whose environment (``/proc/PID/environ``) carries
that value, or that still descends from this pytest process, is a leftover: after a grace for
processes already on their way out, each is named, ended by its PID, and the run fails. Servers
run by the lead or by other checkouts at the same time carry no such value (or another one),
so they are never counted.

``python -m tests.leftovers CHECKOUT``: the processes whose command line, executable or working
directory lies in CHECKOUT (its .venv included), except this one and its ancestors; exit status
1 and their names if there are any.
"""

import os
import signal
import sys
import time
import uuid

import pytest

MARKER = "NAMESRV_TEST_SESSION"
#: how long processes still on their way out (a server's workers after its SIGTERM) may take
GRACE = float(os.environ.get("NAMESRV_LEFTOVERS_GRACE", "15"))
PROC = "/proc"


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _stat(pid):
    """(state, ppid) of ``pid``, or None when it is gone."""
    stat = _read("%s/%d/stat" % (PROC, pid))
    if not stat:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1])


def live_pids():
    """Every process that runs (zombies, which only wait to be reaped, excluded)."""
    for name in os.listdir(PROC):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None and stat[0] not in ("Z", "X"):
                yield int(name)


def command_line(pid):
    raw = _read("%s/%d/cmdline" % (PROC, pid)) or b""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip() or "[%d]" % pid


def carries(pid, value, marker=MARKER):
    """Does ``pid``'s environment carry ``marker``=value (MARKER: this session's)?"""
    environ = _read("%s/%d/environ" % (PROC, pid))
    return environ is not None and ("%s=%s" % (marker, value)).encode() in environ.split(b"\0")


def ancestors(pid):
    """``pid``'s parent, its parent, ... up to init."""
    seen = []
    stat = _stat(pid)
    while stat is not None and stat[1] > 0 and stat[1] not in seen:
        seen.append(stat[1])
        stat = _stat(stat[1])
    return seen


def session_processes(value, root=None):
    """{pid: command line} of the live processes of the session marked ``value``: those carrying
    the marker, and the descendants of ``root`` (this pytest process), ``root`` itself excluded."""
    root = os.getpid() if root is None else root
    found = {}
    for pid in live_pids():
        if pid == root:
            continue
        if carries(pid, value) or root in ancestors(pid):
            found[pid] = command_line(pid)
    return found


def _inside(path, checkout):
    return path == checkout or path.startswith(checkout.rstrip(os.sep) + os.sep)


def checkout_processes(checkout):
    """{pid: command line} of the live processes run from ``checkout``: their executable, working
    directory or an argument lies in it. This process and its ancestors (the CI script) excluded."""
    checkout = os.path.realpath(checkout)
    mine = {os.getpid(), *ancestors(os.getpid())}
    found = {}
    for pid in live_pids():
        if pid in mine:
            continue
        places = []
        for link in ("exe", "cwd"):
            try:
                places.append(os.readlink("%s/%d/%s" % (PROC, pid, link)))
            except OSError:
                pass
        raw = _read("%s/%d/cmdline" % (PROC, pid)) or b""
        places += [os.path.realpath(a) for a in raw.decode("utf-8", "replace").split("\0") if a.startswith(os.sep)]
        if any(_inside(place, checkout) for place in places):
            found[pid] = command_line(pid)
    return found


def wait_gone(find, grace=GRACE, step=0.1):
    """``find()`` until it is empty or ``grace`` seconds have passed; its last answer."""
    deadline = time.monotonic() + grace
    found = find()
    while found and time.monotonic() < deadline:
        time.sleep(step)
        found = find()
    return found


def end(pids, grace=5.0):
    """SIGTERM each of ``pids``, SIGKILL whichever is still there after ``grace``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        remaining = wait_gone(lambda: [p for p in pids if _stat(p) is not None and _stat(p)[0] not in "ZX"],
                              grace)
        if not remaining:
            return
        pids = remaining


def describe(found):
    return "\n".join("  pid %d: %s" % (pid, line[:300]) for pid, line in sorted(found.items()))


# -- the pytest plugin ---------------------------------------------------------------------------
def pytest_configure(config):
    if not os.path.isdir("%s/self" % PROC):
        return   # no /proc: nothing to look at
    value = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:12])
    os.environ[MARKER] = value
    config.stash[_VALUE] = value


_VALUE = pytest.StashKey[str]()
_FOUND = pytest.StashKey[dict]()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """After every fixture's teardown: fail the run if anything the tests started still runs."""
    config = session.config
    value = config.stash.get(_VALUE, None)
    if value is None:
        return
    found = wait_gone(lambda: session_processes(value))
    if not found:
        return
    config.stash[_FOUND] = found
    end(list(found))
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    found = config.stash.get(_FOUND, None)
    if found:
        terminalreporter.section("processes left running by the tests", sep="!", red=True, bold=True)
        terminalreporter.line("%d process(es) started by this run still ran %.0fs after the last test; ended "
                              "now, and the run fails:\n%s" % (len(found), GRACE, describe(found)), red=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit("usage: python -m tests.leftovers CHECKOUT")
    found = wait_gone(lambda: checkout_processes(argv[0]))
    if found:
        print("processes of %s still running after the tests:\n%s" % (os.path.realpath(argv[0]), describe(found)))
        end(list(found))
        sys.exit(1)
    print("no process of %s left running" % os.path.realpath(argv[0]))


if __name__ == "__main__":
    main()
