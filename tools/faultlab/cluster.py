"""The servers of a fault-lab run, each in its lab host: name servers with embedded controllers (ours or
Apache RocketMQ 5.3.3's), brokers (the fake one, or 5.3.3's in controller mode), and the agent.

Every host has its own network stack, so every name server listens on 9876 and every controller on
9878, as on real machines; their files go to a work directory per host.
"""

import os
import signal
import subprocess
import sys
import time

from tools import processes
from tools.faultlab.agent import stop_bound

#: the checkout: the lab's own processes run its modules (python -m tools.faultlab....)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMESRV_PORT = 9876
CONTROLLER_PORT = 9878
BROKER_PORT = 20911

_OPENS5 = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
           "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
           "--add-opens", "java.base/java.util=ALL-UNNAMED", "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
           "-Dtls.server.mode=disabled"]


def _write_properties(path, properties):
    with open(path, "w") as f:
        f.writelines("%s=%s\n" % item for item in properties.items())


class Member:
    """One name server with its embedded controller, in lab host ``host``; ``kind`` is ours or java."""

    def __init__(self, lab, host, index, peers, workdir, kind, peer_home=None, secret=None, members=None):
        self.lab, self.host, self.index, self.kind = lab, host, index, kind
        self.peer_home = peer_home
        self.address = lab[host].address
        self.workdir = os.path.join(workdir, host)
        os.makedirs(self.workdir, exist_ok=True)
        self.properties = {
            "listenPort": NAMESRV_PORT, "enableControllerInNamesrv": "true", "controllerDLegerGroup": "lab",
            "controllerDLegerPeers": peers, "controllerDLegerSelfId": "n%d" % index,
            "controllerStorePath": os.path.join(self.workdir, "controller"), "scanNotActiveBrokerInterval": "5000",
            "kvConfigPath": os.path.join(self.workdir, "kvConfig.json"),
            "configStorePath": os.path.join(self.workdir, "namesrv.conf")}
        if kind == "ours":
            self.properties.update({
                "bindAddress": self.address, "routeReadWorkers": "0", "logDir": os.path.join(self.workdir, "logs"),
                "routeSnapshotPath": os.path.join(self.workdir, "routes.snapshot"), "controllerPeerSecretFile": secret,
                "controllerMembersFile": members,
                "statusListenPort": "0"})
        else:
            self.properties.update({"rocketmqHome": self.workdir})
        self.conf = os.path.join(self.workdir, "namesrv.properties")
        _write_properties(self.conf, self.properties)
        self.process = None
        self.paused = False
        self.extra = []

    @property
    def member_id(self):
        return "n%d" % self.index

    def store(self):
        """This member's Raft store (its journal, snapshot and fenced marker)."""
        return os.path.join(self.properties["controllerStorePath"], self.member_id)

    def configure(self, **properties):
        """Change properties for the next start (a joining member's peers, say)."""
        self.properties.update(properties)
        _write_properties(self.conf, self.properties)

    @property
    def namesrv(self):
        return "%s:%d" % (self.address, NAMESRV_PORT)

    @property
    def controller(self):
        return "%s:%d" % (self.address, CONTROLLER_PORT)

    def command(self):
        if self.kind == "ours":
            twistd = os.path.join(os.path.dirname(sys.executable), "twistd")
            return [twistd, "-n", "--pidfile=", "--logfile", os.path.join(self.workdir, "twistd.log"), "namesrv",
                    "-c", self.conf] + self.extra
        return (["java", "-Xms256m", "-Xmx256m"] + _OPENS5 +
                ["-Duser.home=" + self.workdir, "-Drocketmq.home.dir=" + self.workdir,
                 "-Dlogback.configurationFile=" + os.path.join(self.peer_home, "conf", "logback.xml"),
                 "-Drmq.logdir=" + self.workdir, "-cp", os.path.join(self.peer_home, "lib", "*"),
                 "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", self.conf])

    def start(self, extra=()):
        """Start it (``extra``: arguments for this start only, e.g. --force-new-controller-group)."""
        self.extra = list(extra)
        out = open(os.path.join(self.workdir, "stdout.log"), "ab")
        # ours runs this checkout's code, as the lab's own processes do (not what was last installed)
        env = dict(os.environ, ROCKETMQ_HOME=self.workdir, PYTHONPATH=REPO)
        self.process = self.lab.spawn(self.host, self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                                      cwd=self.workdir)
        self.paused = False
        return self

    def running(self):
        return self.process is not None and self.process.poll() is None

    def kill(self):
        if self.running():
            if self.paused:
                self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(10)
        self.paused = False

    def pause(self):
        if self.running() and not self.paused:
            self.process.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.running() and self.paused:
            self.process.send_signal(signal.SIGCONT)
            self.paused = False


class FakeBrokerProcess:
    def __init__(self, lab, host, name, workdir, controllers, namesrvs):
        self.lab, self.host, self.name = lab, host, name
        self.address = "%s:%d" % (lab[host].address, BROKER_PORT)
        self.workdir = os.path.join(workdir, host)
        os.makedirs(self.workdir, exist_ok=True)
        self.events = os.path.join(self.workdir, "events.jsonl")
        self.argv = [sys.executable, "-m", "tools.faultlab.fakebroker", "--name", name, "--addr", self.address,
                     "--controllers", ",".join(controllers), "--namesrv", ",".join(namesrvs),
                     "--events", self.events, "--data", os.path.join(self.workdir, "data")]
        self.process = None
        self.paused = False

    def start(self):
        out = open(os.path.join(self.workdir, "stdout.log"), "ab")
        self.process = self.lab.spawn(self.host, self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        self.paused = False
        return self

    running = Member.running
    kill = Member.kill
    pause = Member.pause
    resume = Member.resume


class AgentProcess:
    def __init__(self, lab, host, workdir, members, brokers, seed, fake_brokers=True):
        self.lab, self.host = lab, host
        self.out = os.path.join(workdir, "agent.jsonl")
        self.argv = [sys.executable, "-m", "tools.faultlab.agent",
                     "--controllers", ",".join(m.controller for m in members),
                     "--namesrv", ",".join(m.namesrv for m in members),
                     "--brokers", ",".join(b.address for b in brokers), "--out", self.out, "--seed", str(seed)]
        if fake_brokers:
            self.argv.append("--fake-brokers")
        self.brokers = brokers if fake_brokers else []   # the fake ones are read back at its stop
        self.process = None
        self.workdir = workdir

    def start(self):
        out = open(os.path.join(self.workdir, "agent.stdout.log"), "ab")
        self.process = self.lab.spawn(self.host, self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        return self

    def stop(self):
        """SIGTERM, then as long as the agent's own stop may take (its clients, then each broker's log read back:
        agent.stop_bound) before a kill: on a loaded machine a fixed 30 s killed it mid read-back."""
        processes.stop(self.process, timeout=stop_bound(len(self.brokers)) + 10.0)


wait_for = processes.wait_for


class JavaBrokerProcess:
    """An Apache RocketMQ 5.3.3 broker in controller mode (``allAckInSyncStateSet=true``), in its lab host."""

    def __init__(self, lab, host, name, workdir, controllers, namesrvs, peer_home):
        self.lab, self.host, self.name, self.peer_home = lab, host, name, peer_home
        self.address = "%s:%d" % (lab[host].address, BROKER_PORT)
        self.workdir = os.path.join(workdir, host)
        self.events = os.path.join(self.workdir, "events.jsonl")      # none: its log is its own
        store = os.path.join(self.workdir, "store")
        os.makedirs(os.path.join(store, "commitlog"), exist_ok=True)
        self.conf = os.path.join(self.workdir, "broker.properties")
        _write_properties(self.conf, {
            "brokerName": name, "brokerClusterName": "LabCluster", "listenPort": BROKER_PORT,
            "haListenPort": BROKER_PORT + 1, "brokerIP1": lab[host].address, "storePathRootDir": store,
            "storePathCommitLog": os.path.join(store, "commitlog"), "mappedFileSizeCommitLog": 67108864,
            "mappedFileSizeConsumeQueue": 600000, "autoCreateTopicEnable": "true",
            "namesrvAddr": ";".join(namesrvs), "enableControllerMode": "true",
            "controllerAddr": ";".join(controllers), "brokerId": "-1", "allAckInSyncStateSet": "true",
            "syncBrokerMetadataPeriod": "2000", "checkSyncStateSetPeriod": "2000",
            "syncControllerMetadataPeriod": "2000"})
        self.process = None
        self.paused = False

    def start(self):
        out = open(os.path.join(self.workdir, "stdout.log"), "ab")
        argv = (["java", "-Xms256m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"] + _OPENS5 +
                ["-Duser.home=" + self.workdir, "-Drocketmq.home.dir=" + self.peer_home,
                 "-Dlogback.configurationFile=" + os.path.join(self.peer_home, "conf", "logback.xml"),
                 "-Drmq.logdir=" + self.workdir, "-cp", os.path.join(self.peer_home, "lib", "*"),
                 "org.apache.rocketmq.broker.BrokerStartup", "-c", self.conf])
        env = dict(os.environ, ROCKETMQ_HOME=self.peer_home)
        self.process = self.lab.spawn(self.host, argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                      cwd=self.workdir)
        return self

    running = Member.running
    kill = Member.kill
    pause = Member.pause
    resume = Member.resume


def compile_traffic(peer_home, workdir):
    """tools/faultlab/java/Traffic.java, compiled against the peer's jars; the classpath to run it."""
    out = os.path.join(workdir, "traffic")
    os.makedirs(out, exist_ok=True)
    source = os.path.join(REPO, "tools", "faultlab", "java", "Traffic.java")
    subprocess.run(["javac", "-d", out, "-cp", os.path.join(peer_home, "lib", "*"), source], check=True,
                   capture_output=True, timeout=180)
    return "%s:%s" % (out, os.path.join(peer_home, "lib", "*"))


class TrafficProcess:
    """Traffic.java's producer in the client host; its ACK/FAIL lines become the agent's ``send`` records."""

    def __init__(self, lab, host, classpath, namesrvs, record_path, count=100000, pause_ms=50):
        import threading
        self.record_path = record_path
        argv = ["java", "-Xmx128m", "-Drocketmq.client.logUseSlf4j=false", "-cp", classpath, "Traffic", "send",
                ";".join(namesrvs), "LabTopic", str(count), str(pause_ms)]
        self.process = lab.spawn(host, argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        import json
        sent = time.monotonic()
        with open(self.record_path, "a", buffering=1) as out:
            for line in self.process.stdout:
                now = time.monotonic()
                parts = line.split()
                if len(parts) >= 2 and parts[0] in ("ACK", "FAIL"):
                    out.write(json.dumps({"kind": "send", "t": now, "key": parts[1], "ok": parts[0] == "ACK",
                                          "reply": line.strip(), "call": sent, "ret": now}) + "\n")
                sent = now

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def read_back_java(lab, host, classpath, namesrvs, limit_ms=60000):
    """Every message the topic's queues hold now (Traffic.java's reader: each queue to its end offset, errors
    retried for up to ``limit_ms``): a ``log`` record; "incomplete" names the queues it could not read to
    their end."""
    argv = ["java", "-Xmx128m", "-Drocketmq.client.logUseSlf4j=false", "-cp", classpath, "Traffic", "read",
            ";".join(namesrvs), "LabTopic", str(limit_ms)]
    process = lab.spawn(host, argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out, _ = process.communicate(timeout=limit_ms / 1000.0 + 120)
    keys = [line.split()[1] for line in out.splitlines() if line.startswith("MSG ")]
    incomplete = [line.split(None, 1)[1] for line in out.splitlines() if line.startswith("INCOMPLETE ")]
    return {"kind": "log", "t": time.monotonic(), "broker": "topic LabTopic", "keys": keys, "role": "master",
            "epoch": 0, "incomplete": incomplete}
