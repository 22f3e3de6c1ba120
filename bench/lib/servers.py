"""The servers a benchmark measures, as subprocesses on free 127.0.0.1 ports, and /proc readings.

``NamesrvServer`` runs ``twistd -n namesrv`` through ``bench.lib.profiled_twistd`` (which costs
nothing until SIGUSR1 switches cProfile on), with a properties file that keeps it
self-contained: no route snapshot, KV file and event log in the server's own work dir.
``BaselineServer`` runs ``bench.lib.baseline``.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from tools import processes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_status_kib(pid, field):
    """A ``kB`` field of /proc/<pid>/status (VmRSS, VmHWM), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid, children=True):
    """User + system CPU seconds of ``pid`` (all its threads), from /proc/<pid>/stat, plus
    those of its running child processes (a server's read workers) when ``children``."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    total = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    if children:
        for child in child_pids(pid):
            total += cpu_seconds(child, children=False) or 0.0
    return total


def child_pids(pid):
    """The running children of ``pid`` (from /proc/<pid>/task/*/children)."""
    pids = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return pids
    for task in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                pids.extend(int(p) for p in f.read().split())
        except OSError:
            continue
    return pids


class _Subprocess:
    """Start, wait for the port, stop; the log goes to a file in ``workdir``."""

    def __init__(self, name, workdir=None):
        self.name = name
        self.own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="bench-%s-" % name)
        self.port = free_port()
        self.log_file = os.path.join(self.workdir, "%s.log" % name)
        self.process = None

    def command(self):
        raise NotImplementedError

    def env(self):
        return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))

    def spawn(self):
        """Start the process (the log appended to ``log_file``), without waiting for its port."""
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(self.command(), cwd=self.workdir, env=self.env(), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self

    def start(self, timeout=30.0):
        self.spawn()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.process.returncode, self.log()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("%s did not listen within %ss:\n%s" % (self.name, timeout, self.log()))

    @property
    def pid(self):
        return self.process.pid

    def rss_kib(self):
        return read_status_kib(self.pid, "VmRSS")

    def peak_rss_kib(self):
        return read_status_kib(self.pid, "VmHWM")

    def cpu_seconds(self):
        return cpu_seconds(self.pid)

    def signal(self, sig):
        self.process.send_signal(sig)

    def stop(self, timeout=20.0):
        processes.stop(self.process, timeout=timeout)

    def cleanup(self):
        self.stop()
        if os.environ.get("BENCH_KEEP_WORKDIR"):
            print("kept %s's working directory (BENCH_KEEP_WORKDIR): %s" % (self.name, self.workdir), file=sys.stderr)
        elif self.own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log(self):
        return processes.read_log(self.log_file, tail=4000)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()
        return False


#: the single-process server (``routeReadWorkers=auto`` starts workers on a machine with 2+ CPUs)
ONE_PROCESS = {"routeReadWorkers": "0"}


class NamesrvServer(_Subprocess):
    """``twistd -n namesrv -c <properties>`` with benchmark-friendly properties.

    Idle and expiry limits are raised so a long phase never loses its fake brokers;
    nothing else differs from the defaults unless ``properties`` says so.
    """

    def __init__(self, properties=None, event_log=False, workdir=None):
        _Subprocess.__init__(self, "namesrv", workdir)
        self.profile_file = os.path.join(self.workdir, "route.prof")
        self.event_log_file = os.path.join(self.workdir, "events.log") if event_log else None
        props = {
            "listenPort": str(self.port),
            "bindAddress": "127.0.0.1",
            "kvConfigPath": os.path.join(self.workdir, "kvConfig.json"),
            "configStorePath": os.path.join(self.workdir, "namesrv.properties"),
            "routeSnapshotEnable": "false",
            "eventLogEnable": "true" if event_log else "false",
            "eventLogPath": self.event_log_file or "",
            "eventLogMaxBytes": str(1 << 32),  # a 50k-topic registration logs 50k topic_route_changed lines
            "logDir": self.workdir,
            "serverChannelMaxIdleTimeSeconds": "3600",
            "brokerChannelExpiredTime": "3600000",
        }
        props.update(properties or {})
        self.config_file = os.path.join(self.workdir, "bench.properties")
        with open(self.config_file, "w") as f:
            f.writelines("%s=%s\n" % item for item in props.items())

    def command(self):
        return [sys.executable, "-m", "bench.lib.profiled_twistd", self.profile_file,
                "-n", "--pidfile=", "--logfile", self.log_file, "namesrv", "-c", self.config_file]

    def wait_for_log(self, text, timeout=30.0):
        """Wait until the server's log contains ``text`` (e.g. its read workers listening)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_file, errors="replace") as f:
                if text in f.read():
                    return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("%r not in the server's log within %ss:\n%s" % (text, timeout, self.log()))

    def start_profile(self):
        self.signal(signal.SIGUSR1)

    def stop_profile(self, timeout=30.0):
        """Stop cProfile in the server; returns the path of the stats it dumped."""
        self._dump(timeout)
        return self.profile_file

    def gc_pauses(self, timeout=30.0):
        """The server's GC pauses since the previous reading (see bench.lib.profiled_twistd)."""
        self._dump(timeout)
        with open(self.profile_file + ".gc.json") as f:
            return json.load(f)

    def _dump(self, timeout):
        done = self.profile_file + ".done"
        if os.path.exists(done):
            os.unlink(done)
        self.signal(signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while not os.path.exists(done):
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not dump its readings within %ss" % timeout)
            time.sleep(0.02)


class BaselineServer(_Subprocess):
    """``python -m bench.lib.baseline``: answers every frame with one pre-encoded response."""

    def __init__(self, body, workdir=None):
        _Subprocess.__init__(self, "baseline", workdir)
        self.body_file = os.path.join(self.workdir, "baseline-body.bin")
        with open(self.body_file, "wb") as f:
            f.write(body or b"")

    def command(self):
        return [sys.executable, "-m", "bench.lib.baseline", "--port", str(self.port), "--body", self.body_file]
