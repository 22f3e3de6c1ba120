"""A fresh Java NameServer for a side-by-side run, from a peer built by ../shared/javapeers/build.sh.

``JavaNamesrv(peer_dir, heap="4g")`` runs ``NamesrvStartup`` of that peer's jars on a free 127.0.0.1
port with its own run directory, with the heap given (the peers' own ``namesrv.sh`` fixes 512 MB: at
a million topics the 4.9.8 NameServer needs more) and G1, as the issue ran it; nothing of the peer is
copied. ``python -m bench bigfleet --java DIR [--java-heap 4g]`` measures one instead of ours.
"""

import os
import time

from bench.lib.servers import _Subprocess
from namesrv.client import ask
from namesrv.protocol.codes import RequestCode

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"   # the same class in 4.9.8 and 5.3.3


class JavaNamesrv(_Subprocess):
    def __init__(self, peer_dir, heap="4g", workdir=None):
        _Subprocess.__init__(self, "java-namesrv", workdir)
        self.peer_dir, self.heap = os.path.abspath(peer_dir), heap
        self.properties = os.path.join(self.workdir, "namesrv.properties")
        os.makedirs(os.path.join(self.workdir, "conf"), exist_ok=True)
        os.makedirs(os.path.join(self.workdir, "namesrv"), exist_ok=True)
        logback = os.path.join(self.peer_dir, "conf", "logback_namesrv.xml")
        if os.path.exists(logback):
            with open(logback, "rb") as src, open(os.path.join(self.workdir, "conf", "logback_namesrv.xml"),
                                                  "wb") as dst:
                dst.write(src.read())
        with open(self.properties, "w") as f:
            f.write("listenPort=%d\nrocketmqHome=%s\nkvConfigPath=%s\nconfigStorePath=%s\n" % (
                self.port, self.workdir, os.path.join(self.workdir, "namesrv", "kvConfig.json"),
                os.path.join(self.workdir, "namesrv", "namesrv.properties")))

    def command(self):
        opens = []
        if os.path.basename(self.peer_dir.rstrip("/")) == "java5peer":
            opens = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                     "--add-opens", "java.base/java.util=ALL-UNNAMED", "-Dtls.server.mode=disabled"]
        return ["java", "-server", "-Xms" + self.heap, "-Xmx" + self.heap, "-XX:+UseG1GC", *opens,
                "-Duser.home=" + self.workdir, "-Drocketmq.home.dir=" + self.workdir,
                "-cp", os.path.join(self.peer_dir, "lib", "*"), NAMESRV_MAIN, "-c", self.properties]

    def env(self):
        return dict(os.environ, ROCKETMQ_HOME=self.workdir)

    def start(self, timeout=60.0):
        _Subprocess.start(self, timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ask(self.port, RequestCode.GET_BROKER_CLUSTER_INFO, timeout=5) is not None:
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("the Java NameServer did not answer within %ss:\n%s" % (timeout, self.log()))
