"""Java peers built by ../shared/javapeers/build.sh, found through the environment; tests skip, saying why,
without them. Nothing of the peers is in this repository.

``JAVAPEER``: the 4.9.8 peer's directory (``DEST/javapeer``); ``JAVAPEER5``: the 5.3.3 one (``DEST/java5peer``).
"""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

BUILD_HINT = "build it with ../shared/javapeers/build.sh DEST all and set %s=DEST/%s"


def peer_dir(variable, name):
    """The peer's directory, or skip the test with the reason."""
    path = os.environ.get(variable)
    if not path:
        pytest.skip("no Java peer: %s is not set (%s)" % (variable, BUILD_HINT % (variable, name)))
    if not os.path.isfile(os.path.join(path, "broker.sh")):
        pytest.skip("no Java peer: %s=%s has no broker.sh (%s)" % (variable, path, BUILD_HINT % (variable, name)))
    if shutil.which("java") is None:
        pytest.skip("no Java peer: no `java` on PATH (OpenJDK 17 runs the peers)")
    return path


def broker_ports():
    """A broker's PORT with PORT-2 (VIP channel) and PORT+1 (HA) free too, on 127.0.0.1."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 1026 or port > 65534:
            continue
        try:
            for p in (port - 2, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free broker ports")


class JavaBroker:
    """``broker.sh NAMESRV NAME PORT STORE CLUSTER`` of a peer, in its own process group."""

    def __init__(self, peer, namesrv, name, store, cluster, extra_props=()):
        self.peer, self.namesrv, self.name, self.store, self.cluster = peer, namesrv, name, str(store), cluster
        self.port = broker_ports()
        self.extra_props = list(extra_props)
        self.process = None

    def start(self):
        env = dict(os.environ, BROKER_EXTRA_PROPS="\n".join(self.extra_props))
        self.out = open(os.path.join(self.store, "broker.out"), "wb")
        self.process = subprocess.Popen(
            ["bash", os.path.join(self.peer, "broker.sh"), self.namesrv, self.name, str(self.port), self.store,
             self.cluster], env=env, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def stop(self, timeout=20.0):
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.out.close()

    def output(self):
        with open(os.path.join(self.store, "broker.out"), errors="replace") as f:
            return f.read()
