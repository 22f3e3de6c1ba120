"""The processes of a stop campaign: the server under test (``twistd namesrv`` as shipped), the two
controllers it forms a Raft group with, and how one stop is timed and checked."""

import glob
import os
import signal
import subprocess
import time

from namesrv.client import answers
from namesrv.controller.replication.identity import create_group_keys
from namesrv.observe.stopwatch import child_pids
from namesrv.readworkers.channel.scratch import process_start
from tests.integration.server import TWISTD, NamesrvProcess, free_port
from tools import processes

#: a stop still running this long after its signal is ended with SIGKILL (after its own report)
HARD_LIMIT = 30.0
#: how long after the main process's exit its children may take to be gone (a read worker exits within
#: a second of its main process's death, whatever killed it: docs/restarts.md)
ORPHAN_GRACE = 1.0
SECRET = b"stop-stress-group-secret-0123456789\n"


def running(pid):
    """Alive and not a zombie."""
    return process_start(pid) is not None


def descendants(pid):
    found, stack = [], [pid]
    while stack:
        for child in child_pids(stack.pop()):
            found.append(child)
            stack.append(child)
    return found


class Group:
    """Controllers n1 and n2 (``twistd controller``), kept for the whole campaign; n0 is the server's own."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.ports = {name: free_port() for name in ("n0", "n1", "n2")}
        self.secret = os.path.join(workdir, "controller.secret")
        with open(self.secret, "wb") as f:
            f.write(SECRET)
        os.chmod(self.secret, 0o600)
        #: each member proves its id with a key of its own (controllerMembersFile)
        self.members = create_group_keys(workdir, sorted(self.ports))
        self.processes = {}

    @property
    def peers(self):
        return ";".join("%s-127.0.0.1:%d" % (name, port) for name, port in sorted(self.ports.items()))

    def properties(self, self_id):
        return {"controllerDLegerGroup": "stopstress", "controllerDLegerPeers": self.peers,
                "controllerDLegerSelfId": self_id, "controllerPeerSecretFile": self.secret,
                "controllerMembersFile": self.members,
                "controllerStorePath": os.path.join(self.workdir, "store-" + self_id)}

    def ensure(self):
        """Start n1 and n2 where they are not running (a campaign restarts one that died)."""
        for name in ("n1", "n2"):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                continue
            conf = os.path.join(self.workdir, name + ".properties")
            with open(conf, "w") as f:
                f.writelines("%s=%s\n" % item for item in self.properties(name).items())
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_repo(), os.environ.get("PYTHONPATH")) if p))
            self.processes[name] = subprocess.Popen(
                [TWISTD, "-n", "--pidfile=", "--logfile", os.path.join(self.workdir, name + ".log"), "controller",
                 "-c", conf], cwd=self.workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def pause(self, name):
        self.processes[name].send_signal(signal.SIGSTOP)

    def resume(self, name):
        process = self.processes.get(name)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)

    def close(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _repo():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class StartFailed(RuntimeError):
    """The server did not serve within its start's timeout (then killed): no stop to time."""


class Server(NamesrvProcess):
    """One ``twistd namesrv`` of the campaign's instance (its port and files are the same at every start, as a
    restarted server's are); ``log_name`` keeps a takeover's second process in a log of its own."""

    def __init__(self, workdir, properties, port, log_name):
        NamesrvProcess.__init__(self, workdir, properties, port=port)
        self.log_file = os.path.join(self.workdir, log_name)
        self.output = open(self.log_file + ".out", "ab")   # never a pipe nobody reads: a full one stops a server

    def spawn(self, *extra):
        """Start without waiting (a takeover's new process: the old one answers meanwhile)."""
        self.process = subprocess.Popen(self.command(*extra), cwd=self.workdir, env=self.env(),
                                        stdout=self.output, stderr=subprocess.STDOUT)
        return self

    def start(self, timeout=90.0):
        started = time.monotonic()
        self.spawn()
        while not answers(self.port, timeout=1.0):
            if self.process.poll() is not None or time.monotonic() - started > timeout:
                if self.process.poll() is None:
                    self.process.kill()
                    self.process.wait()
                raise StartFailed("namesrv did not serve (exit %s); its log's tail:\n%s"
                                   % (self.process.poll(), self.log()[-3000:]))
            time.sleep(0.02)
        return self

    def log_files(self):
        """Its log, the rotated parts first (twistd rotates at 1 MB), and its output."""
        rotated = sorted(glob.glob(self.log_file + ".[0-9]*"), key=lambda p: -int(p.rpartition(".")[2]))
        return rotated + [self.log_file, self.output.name]

    def log(self):
        return "".join(map(processes.read_log, self.log_files()))

    def remove_logs(self):
        self.output.close()
        for path in self.log_files():
            try:
                os.unlink(path)
            except OSError:
                pass

    def workers(self):
        return descendants(self.process.pid) if self.process is not None else []


def hang_reports(log_dir):
    return set(glob.glob(os.path.join(log_dir, "namesrv-stop-hang-*.txt")))


def timed_stop(server, sig=signal.SIGTERM, bound=5.0, hard_limit=HARD_LIMIT):
    """Signal ``server``'s main process and time its exit. Returns the figures of the stop: ``seconds`` (None if
    it did not end within ``hard_limit``: then killed), ``exit``, ``orphans`` (its processes still running
    ``ORPHAN_GRACE`` after its exit: killed), ``clean`` (twistd logged its shutdown, or the signal came before its
    reactor ran: ``before_reactor``), ``tracebacks``, and ``reports`` (hang reports it wrote). A process that had
    exited before the signal is ``exited_before`` (no stop)."""
    log_dir = server.properties["logDir"]
    reports_before = hang_reports(log_dir)
    family = server.workers()
    process = server.process
    if process.poll() is not None:   # it had exited already (an old process after handing over)
        return {"seconds": None, "exit": process.returncode, "hung": False, "orphans": 0, "workers": 0,
                "clean": True, "tracebacks": 0, "reports": [], "logs": server.log_files(), "exited_before": True}
    began = time.monotonic()
    process.send_signal(sig)
    seconds = None
    try:
        process.wait(hard_limit)
        seconds = time.monotonic() - began
    except subprocess.TimeoutExpired:
        family = sorted(set(family) | set(server.workers()))
        process.kill()
        process.wait()
    deadline = time.monotonic() + ORPHAN_GRACE
    while any(running(pid) for pid in family) and time.monotonic() < deadline:
        time.sleep(0.01)
    orphans = [pid for pid in family if running(pid)]
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    server.output.flush()
    log = server.log()
    # SIGTERM before the reactor ran (still importing, or building the service): the default action ended it
    early = process.returncode == -sig and "Received %s" % signal.Signals(sig).name not in log
    return {"seconds": None if seconds is None else round(seconds, 4), "exit": process.returncode,
            "hung": seconds is None or seconds > bound, "orphans": len(orphans), "workers": len(family),
            "clean": "Server Shut Down." in log or early, "before_reactor": early, "tracebacks": log.count("Traceback"),
            "reports": sorted(hang_reports(log_dir) - reports_before), "logs": server.log_files()}
