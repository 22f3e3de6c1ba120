"""Debian's HAProxy as a child process of a test: TCP frontends on free 127.0.0.1 ports, each passing its
connections to one backend with ``send-proxy`` (PROXY v1) or ``send-proxy-v2``, configured by a file in the
test's tmp dir.

HAProxy connects to the backends from ``source`` (another loopback address, 127.0.0.3 by default), and a
client may connect to a frontend from any 127.0.0.0/8 address (``connect_from``): the header then names an
address that is neither the proxy's nor the one every test client has, so a test can tell which one the
server checked. Health checks (``check``) run against every backend, as in production.
"""

import os
import shutil
import socket
import subprocess
import time

import pytest

from namesrv.client import BlockingRemotingClient
from tests.integration.server import free_port
from tools import processes

PROXY_SOURCE = "127.0.0.3"
SEND = {"v1": "send-proxy", "v2": "send-proxy-v2"}


def haproxy_binary():
    """The haproxy executable, or a skip saying how to get it."""
    path = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)
    if path is None:
        pytest.skip("needs HAProxy for the PROXY protocol tests: apt-get install -y haproxy (.ci/run installs it)")
    return path


class HAProxy:
    """``frontends``: {name: (backend port, "v1" or "v2")}; ``ports[name]`` is where each listens."""

    def __init__(self, workdir, frontends, source=PROXY_SOURCE):
        self.binary = haproxy_binary()
        self.workdir = str(workdir)
        self.frontends = dict(frontends)
        self.source = source
        self.ports = {name: free_port() for name in self.frontends}
        self.config_file = os.path.join(self.workdir, "haproxy.cfg")
        self.log_file = os.path.join(self.workdir, "haproxy.out")
        self.process = None
        with open(self.config_file, "w") as f:
            f.write(self.config())

    def config(self):
        lines = ["global", "    maxconn 512", "", "defaults", "    mode tcp", "    timeout connect 5s",
                 "    timeout client 120s", "    timeout server 120s", ""]
        for name, (backend_port, version) in sorted(self.frontends.items()):
            lines += ["frontend fe_%s" % name, "    bind 127.0.0.1:%d" % self.ports[name],
                      "    default_backend be_%s" % name, "",
                      "backend be_%s" % name,
                      "    server ns 127.0.0.1:%d %s source %s check inter 500ms" % (
                          backend_port, SEND[version], self.source), ""]
        return "\n".join(lines)

    def start(self, timeout=15.0):
        checked = subprocess.run([self.binary, "-c", "-f", self.config_file], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        with open(self.log_file, "wb") as out:
            self.process = subprocess.Popen([self.binary, "-db", "-f", self.config_file], stdout=out,
                                            stderr=subprocess.STDOUT, cwd=self.workdir)
        try:
            self._wait_listening(time.monotonic() + timeout)
        except AssertionError:
            self.stop()
            raise
        return self

    def _wait_listening(self, deadline):
        for port in self.ports.values():
            while True:
                assert self.process.poll() is None, "haproxy exited:\n" + self.log()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "haproxy did not listen:\n" + self.log()
                    time.sleep(0.05)

    def client(self, name, connect_from="127.0.0.1", timeout=10.0):
        """A remoting client to frontend ``name``, connecting from ``connect_from``."""
        return SourcedClient(self.ports[name], connect_from, timeout)

    def log(self):
        return processes.read_log(self.log_file)

    def stop(self):
        processes.stop(self.process, timeout=10)


class SourcedClient(BlockingRemotingClient):
    """The blocking test client, connecting from a chosen loopback address."""

    def __init__(self, port, source, timeout=10.0, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout, source_address=(source, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
