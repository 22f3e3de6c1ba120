"""Where a server process's time goes, from py-spy's samples: ``python -m bench bigfleet --profile DIR``.

``Spies(pids, out_dir, seconds)`` runs ``py-spy record --format raw --idle --nonblocking`` on each process
(py-spy from PyPI, not a dependency of the project: without it the run says so and measures the rest), and
``split(path)`` sorts the samples of one process into what a route read costs: the system calls (epoll_wait,
recv, send), the reactor's own work (its loop, its per-socket dispatch, its timers), framing, the connection's
protocol code, turns, the answer cache, the route lookup, dispatch (the slow path) and the observers' counts.
Each sample goes to the first rule its stack matches, from the leaf up; ``--idle`` keeps the samples where the
process waited in epoll_wait, so the shares are of the window's wall time, and idle is one of them.
"""

import collections
import os
import shutil
import subprocess
import sys

#: (category, substrings of the leaf frame) then (category, substrings of any frame): first match wins
LEAF_RULES = (
    ("syscall: epoll_wait (idle included)", ("EPollReactor.doPoll", "FairEPollReactor.doPoll")),
    ("syscall: recv", ("Connection.doRead (twisted/internet/tcp.py",)),
    ("syscall: send", ("write (namesrv/protocol/writethrough.py",)),
)
STACK_RULES = (
    ("syscall: send", ("doWrite", "writeSomeData")),
    ("route lookup (joining a body)", ("_joined_route_body", "queue_piece", "broker_piece", "remember_joined")),
    ("route lookup", ("body_for", "route_body")),
    ("answer cache (frame from cached bytes)", ("AnswerCache.answer", "Shapes.answer", "_replay")),
    ("observers (request counts)", ("AnswerCache.report", "record_request")),
    ("framing", ("framing.py",)),
    ("dispatch (slow path: decode, chain, processor, encode)", ("dispatch", "registry.py", "codec.py",
                                                                "freshness.py", "client.py")),
    ("turns and scheduler", ("turns.py", "scheduler.py", "task.py")),
    ("protocol (per read)", ("remoting.py", "connections.py", "writethrough.py")),
    ("reactor: timers", ("resetTimeout", "DelayedCall", "runUntilCurrent", "callLater")),
    ("reactor: per-socket dispatch", ("callWithLogger", "callWithContext", "_doReadOrWrite", "tcp.py")),
    ("reactor: loop", ("mainLoop", "internet/base.py")),
)


def categorize(frames):
    leaf = frames[-1] if frames else ""
    for category, needles in LEAF_RULES:
        if any(needle in leaf for needle in needles):
            return category
    joined = ";".join(frames)
    for category, needles in STACK_RULES:
        if any(needle in joined for needle in needles):
            return category
    return "other"


def split(path):
    """{category: share of the samples} for one py-spy raw file (lines ``frame;frame;... count``)."""
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if stack and count.isdigit():
                counts[categorize(stack.split(";"))] += int(count)
    total = sum(counts.values())
    return {category: n / total for category, n in counts.most_common()} if total else {}


class Spies:
    """py-spy recording each of ``pids`` (name -> pid) for ``seconds`` into ``out_dir``."""

    def __init__(self, pids, out_dir, seconds, rate=250):
        self.pids, self.out_dir = dict(pids), out_dir
        self.files = {name: os.path.join(out_dir, "%s.pyspy.txt" % name.replace(" ", "-")) for name in self.pids}
        beside = os.path.join(os.path.dirname(sys.executable), "py-spy")   # a venv's, run without activating it
        self.command = beside if os.access(beside, os.X_OK) else shutil.which("py-spy")
        self.missing = self.command is None
        self._procs = []
        self.seconds, self.rate = seconds, rate

    def start(self):
        if self.missing:
            return self
        os.makedirs(self.out_dir, exist_ok=True)
        for name, pid in self.pids.items():
            self._procs.append(subprocess.Popen(
                [self.command, "record", "--pid", str(pid), "--duration", "%d" % max(1, int(self.seconds)),
                 "--rate", str(self.rate), "--format", "raw", "--idle", "--nonblocking", "-o", self.files[name]],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return self

    def splits(self):
        """Wait for the recordings; {name: split} of those that wrote their file."""
        for proc in self._procs:
            try:
                proc.wait(self.seconds + 30)
            except subprocess.TimeoutExpired:
                proc.kill()
        return {name: split(path) for name, path in self.files.items() if os.path.exists(path)}
