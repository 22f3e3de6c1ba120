"""Ctrl-C of ``make run``, timed: ``python -m tools.stopstress --make-run 100``.

As a new user runs it (tests/packaging/test_make_run.py): a copy of the checkout with a venv of its own,
``make run`` in a session of its own, SIGINT to its whole process group as a terminal sends Ctrl-C, at a
random moment after it answers, with a client reading routes meanwhile. A stop is the time from the signal
until no process of the group is left (make, its shell, twistd, the read worker); it must leave no
``make: ***`` line and no traceback, and the server must log its shutdown. The first start installs the
venv (a minute or two); the others start in seconds.
"""

import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from namesrv.client import BlockingRemotingClient, answers
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from tests.integration.server import REPO, free_port
from tests.packaging.checkout import IGNORED
from tools.processes import group_members

MAKE = shutil.which("make")
#: a group still there this long after Ctrl-C is ended (after its stacks: SIGABRT under PYTHONFAULTHANDLER)
HARD_LIMIT = 60.0
#: the first start installs the venv
FIRST_START = 900.0


def _as_a_terminal_starts_it():
    signal.signal(signal.SIGINT, signal.SIG_DFL)   # a background shell may have ignored it: a terminal does not


def _reads(port, stop_event):
    while not stop_event.is_set():
        try:
            with BlockingRemotingClient("127.0.0.1", port, timeout=2) as client:
                while not stop_event.is_set():
                    client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}))
        except OSError:
            stop_event.wait(0.05)


def one_stop(tree, home, rng, bound, output_path):
    port, status_port = free_port(), free_port()
    env = dict(os.environ, HOME=home, PYTHONFAULTHANDLER="1")
    env.pop("PYTHONPATH", None)
    env.pop("MAKEFLAGS", None)
    with open(output_path, "wb") as output:
        process = subprocess.Popen([MAKE, "run", "ARGS=--listenPort %d" % port, "STATUS_PORT=%d" % status_port],
                                   cwd=tree, env=env, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True, preexec_fn=_as_a_terminal_starts_it)
    deadline = time.monotonic() + (FIRST_START if not os.path.exists(os.path.join(tree, ".venv")) else 120)
    while not answers(port, timeout=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            _end_group(process)
            raise RuntimeError("make run did not serve; its output:\n%s" % _read(output_path)[-3000:])
        time.sleep(0.1)
    stop_event = threading.Event()
    reader = threading.Thread(target=_reads, args=(port, stop_event), daemon=True)
    reader.start()
    wait = rng.uniform(0.2, 2.0)
    time.sleep(wait)
    began = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    seconds = None
    while time.monotonic() - began < HARD_LIMIT:
        if not group_members(process.pid):
            seconds = time.monotonic() - began
            break
        time.sleep(0.005)
    stop_event.set()
    states = ""
    if seconds is None:
        states = subprocess.run(["ps", "-g", str(process.pid), "-o", "pid,ppid,stat,wchan:24,etime,args"],
                                capture_output=True, text=True).stdout
        _end_group(process, signal.SIGABRT)
    process.wait()
    reader.join(5)
    text = _read(output_path)
    return {"seconds": None if seconds is None else round(seconds, 4), "exit": process.returncode,
            "hung": seconds is None or seconds > bound, "orphans": 0,
            "clean": "Server Shut Down." in text and "make: ***" not in text,
            "tracebacks": text.count("Traceback"), "make_error": "make: ***" in text, "states": states,
            "at": "%.2f s after it answered" % wait}


def _end_group(process, first=signal.SIGKILL):
    for sig in (first, signal.SIGKILL):
        for pid in group_members(process.pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(2 if sig != signal.SIGKILL else 0)
    process.wait()


def _read(path):
    with open(path, errors="replace") as f:
        return f.read()


def campaign(stops, bound=5.0, seed=None, log=print, keep=None):
    """``stops`` Ctrl-C stops of ``make run`` on a fresh copy of the checkout; a record each."""
    if MAKE is None:
        raise SystemExit("make is not installed")
    base = tempfile.mkdtemp(prefix="namesrv-makerun-")
    tree = os.path.join(base, "checkout")
    home = os.path.join(base, "home")
    os.makedirs(home)
    shutil.copytree(REPO, tree, ignore=IGNORED)
    keep = keep or os.path.join(base, "kept")
    rng = random.Random(seed)
    records = []
    log("make-run: %d Ctrl-C stops, bound %.1f s, checkout copied to %s" % (stops, bound, tree))
    for index in range(stops):
        output_path = os.path.join(base, "make-run-%d.out" % index)
        record = dict(one_stop(tree, home, rng, bound, output_path), stop=index, kind="make run Ctrl-C",
                      seed=seed)
        bad = record["hung"] or not record["clean"] or record["tracebacks"] or record["make_error"]
        if bad:
            os.makedirs(keep, exist_ok=True)
            record["kept"] = shutil.copy(output_path, keep)
        else:
            os.unlink(output_path)
        records.append(record)
        log("make run %d (%s): %s s, exit %s%s" % (index, record["at"], record["seconds"], record["exit"],
                                                  " <-- kept" if bad else ""))
    shutil.rmtree(tree, ignore_errors=True)
    return records
