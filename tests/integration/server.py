"""Run `twistd -n namesrv` as a subprocess on a free 127.0.0.1 port, for integration tests."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request, route_request
from tools import processes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TWISTD = os.path.join(os.path.dirname(sys.executable), "twistd")


def wait_for(predicate, timeout, what):
    """Until ``predicate()`` is true, looked at every 20 ms; past ``timeout`` s the test fails naming ``what``."""
    return processes.wait_for(predicate, timeout, what, every=0.02, error=AssertionError)


def register_and_read_route(broker, reader, broker_name, topics):
    """``broker`` (a blocking client) registers ``broker_name`` at 127.0.0.1:10911 in DefaultCluster with
    ``topics``, then ``reader`` reads the first one's route: its body, decoded (both answers must succeed)."""
    answer = broker.call(register_request("DefaultCluster", broker_name, "127.0.0.1:10911", topics=topics))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    route = reader.call(route_request(topics[0]))
    assert route.code == ResponseCode.SUCCESS, route.remark
    return json.loads(route.body)


_GIVEN = set()


def free_port():
    """A loopback port nobody listens on now, never one this process was given before: two calls in a
    row could otherwise return the same port (the first probe is closed before the second binds), and
    a server given it twice (``listenPort`` and ``statusListenPort``) refuses to start."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


class NamesrvProcess:
    """One server process; ``properties`` are written to a `-c` file in ``workdir``."""

    def __init__(self, workdir, properties=None, extra_pythonpath=(), port=None):
        self.workdir = str(workdir)
        self.port = port or free_port()
        self.config_file = os.path.join(self.workdir, "namesrv.properties")
        self.log_file = os.path.join(self.workdir, "twistd.log")
        props = {
            "listenPort": str(self.port),
            "bindAddress": "127.0.0.1",
            "kvConfigPath": os.path.join(self.workdir, "kvConfig.json"),
            "routeSnapshotPath": os.path.join(self.workdir, "routes.snapshot"),
            "logDir": os.path.join(self.workdir, "logs"),
        }
        props.update(properties or {})
        self.properties = props
        #: where clients connect: the bind address, or loopback for an any-address bind
        self.host = props["bindAddress"] if props["bindAddress"] not in ("", "0.0.0.0") else "127.0.0.1"
        with open(self.config_file, "w") as f:
            for key, value in props.items():
                f.write("%s=%s\n" % (key, value))
        self.pythonpath = os.pathsep.join([*map(str, extra_pythonpath), REPO])
        self.process = None
        self.hang_report = ""   # what stop() saw of a process that did not stop (its stacks, children, log)

    def command(self, *extra):
        return [TWISTD, "-n", "--pidfile=", "--logfile", self.log_file, "namesrv", "-c", self.config_file, *extra]

    def env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = self.pythonpath
        # A stop that hangs is ended by SIGABRT, which then prints every thread's stack (hang_report)
        env["PYTHONFAULTHANDLER"] = "1"
        return env

    def start(self, timeout=30.0):
        self.process = subprocess.Popen(self.command(), cwd=self.workdir, env=self.env(),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("namesrv exited with %s:\n%s\n%s" % (
                    self.process.returncode, self.process.stdout.read().decode(errors="replace"), self.log()))
            try:
                # Answered, not only accepted: with read workers the port queues connections
                # until a worker has its first replica.
                with BlockingRemotingClient(self.host, self.port, timeout=max(1.0, deadline - time.monotonic())) \
                        as probe:
                    probe.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
                return self
            except ConnectionRefusedError:
                time.sleep(0.05)
            except socket.timeout:
                continue
            except OSError:
                # accepted, then closed: tlsMode=enforcing closes a plain client, so it serves. Else
                # the connection was queued on a socket a dying predecessor on this port still held
                # (its read worker, just after a kill -9), and reset with it: ask again.
                if str(self.properties.get("tlsMode", "")).lower() == "enforcing":
                    return self
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("namesrv did not listen within %ss:\n%s" % (timeout, self.log()))

    def client(self):
        return BlockingRemotingClient(self.host, self.port)

    def stop(self, sig=signal.SIGTERM, timeout=60.0):
        """Signal, wait (a slow disk may hold the last fsyncs); a process still there after ``timeout``
        is aborted (its threads' stacks and the log's tail are kept in ``hang_report`` for the test's
        message), then killed."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.hang_report = self._abort_and_report()
        return self.process.returncode

    def _abort_and_report(self):
        children = subprocess.run(["ps", "--ppid", str(self.process.pid), "-o", "pid,stat,etime,args"],
                                  capture_output=True, text=True).stdout
        self.process.send_signal(signal.SIGABRT)
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        stacks = b""
        if self.process.stdout is not None:   # never blocks: a child may still hold the pipe
            os.set_blocking(self.process.stdout.fileno(), False)
            stacks = self.process.stdout.read() or b""
        stacks = stacks.decode(errors="replace")
        return "did not stop; its children:\n%s\nits stacks:\n%s\nits log's tail:\n%s" % (
            children, stacks[-6000:], self.log()[-4000:])

    def log(self):
        return processes.read_log(self.log_file)
