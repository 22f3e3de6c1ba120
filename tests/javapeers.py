"""The Java peers: Apache RocketMQ 4.9.8 in $JAVAPEER, 5.3.3 in $JAVAPEER5, for tests that run them.

Nothing of the peers is in this repository: a test finds them through the environment and skips,
saying what to set, when they are not there. What a peer directory holds (the release's jars in
``lib/``, the launch scripts the tests call): docs/development.md, "Java-peer tests". The kit's ``broker.sh`` always writes
``namesrvAddr``; a broker that must find its name servers by itself (the address service) needs
the property left out, so ``JavaBroker`` builds the same ``java`` command line from the peer's
``lib/`` instead.
"""

import glob
import json
import os
import socket
import subprocess
import time

import pytest

from namesrv.client import BlockingRemotingClient, signed_request
from namesrv.protocol.codes import RequestCode as C
from tools import processes


#: env variable of each peer, and a jar that proves it is built
PEERS = {"4.9.8": ("JAVAPEER", "rocketmq-4.9.8.jar"), "5.3.3": ("JAVAPEER5", "rocketmq-5.3.3.jar")}

#: the kit's JVM flags (peer4/broker.sh, peer5/common.sh): JDK 17 opens, and 5.3.3 without TLS
_OPENS4 = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
           "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"]
_OPENS5 = _OPENS4 + ["--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.util=ALL-UNNAMED",
                     "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED", "-Dtls.server.mode=disabled"]


def peer(version):
    """The peer's directory, or a skip naming the variable to set."""
    variable, jar = PEERS[version]
    home = os.environ.get(variable, "")
    if not home:
        pytest.skip("needs an Apache RocketMQ %s installation: set %s to its directory (lib/%s and the launch "
                    "scripts of docs/development.md, Java-peer tests)" % (version, variable, jar))
    lib = os.path.join(home, "lib")
    if not os.path.exists(os.path.join(lib, jar)):
        pytest.skip("RocketMQ %s Java peer not built in %s=%s (no lib/%s)" % (version, variable, home, jar))
    if subprocess.run(["java", "-version"], capture_output=True).returncode != 0:
        pytest.skip("no java on PATH for the RocketMQ %s peer" % version)
    return home


#: the in-memory user store a 5.3.3 broker signing with innerClientAuthenticationCredentials needs (its source says why)
MEMORY_USERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "controller", "java", "MemoryUsers.java")


def inner_credentials(directory, access_key, secret_key):
    """What makes a 5.3.3 broker sign every request to name servers and controllers (AclClientRPCHook) as
    ``access_key``: (its properties, the classpath entries to add: MemoryUsers, compiled into ``directory``)."""
    home = peer("5.3.3")
    out = os.path.join(str(directory), "memory-users")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["javac", "-d", out, "-cp", os.path.join(home, "lib", "*"), MEMORY_USERS], check=True,
                   capture_output=True, timeout=120)
    credentials = json.dumps({"accessKey": access_key, "secretKey": secret_key}, separators=(",", ":"))
    return {"innerClientAuthenticationCredentials": credentials, "authenticationMetadataProvider": "MemoryUsers"}, [out]


def free_broker_port(low=20000, high=32000):
    """A port below 32768 (the kit's limit) with PORT-2 (VIP channel) and PORT+1 (HA) free too."""
    for port in range(low + (os.getpid() * 7) % 1000, high, 10):
        sockets = []
        try:
            for p in (port - 2, port, port + 1):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free broker port in %d-%d" % (low, high))


class JavaBroker:
    """A Java broker with the given properties only (the kit's store settings added): no
    ``namesrvAddr`` unless the test gives one. ``jvm_properties`` become ``-Dkey=value``."""

    def __init__(self, version, store, name, cluster, properties=None, jvm_properties=None, port=None, classpath=()):
        self.version = version
        self.classpath = list(classpath)
        self.home = peer(version)
        self.store = os.path.abspath(str(store))
        self.name = name
        self.port = port or free_broker_port()
        os.makedirs(os.path.join(self.store, "commitlog"), exist_ok=True)
        props = {"brokerName": name, "brokerClusterName": cluster, "listenPort": self.port,
                 "storePathRootDir": self.store, "storePathCommitLog": os.path.join(self.store, "commitlog"),
                 "mappedFileSizeCommitLog": 67108864, "mappedFileSizeConsumeQueue": 600000,
                 "autoCreateTopicEnable": "true", "brokerIP1": "127.0.0.1"}
        if version != "4.9.8":
            props["haListenPort"] = self.port + 1
        props.update(properties or {})
        self.config_file = os.path.join(self.store, "broker.properties")
        with open(self.config_file, "w") as f:
            f.writelines("%s=%s\n" % item for item in props.items())
        self.jvm_properties = dict(jvm_properties or {})
        self.out = os.path.join(self.store, "stdout.log")
        self.process = None

    def command(self):
        jvm = ["java", "-Xms256m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"]
        jvm += _OPENS4 if self.version == "4.9.8" else _OPENS5
        jvm += ["-Duser.home=" + self.store, "-Drocketmq.home.dir=" + self.home]
        if self.version != "4.9.8":
            jvm += ["-Dlogback.configurationFile=" + os.path.join(self.home, "conf", "logback.xml"),
                    "-Drmq.logdir=" + self.store]
        jvm += ["-D%s=%s" % item for item in self.jvm_properties.items()]
        return jvm + ["-cp", os.pathsep.join([os.path.join(self.home, "lib", "*"), *self.classpath]),
                      "org.apache.rocketmq.broker.BrokerStartup",
                      "-c", self.config_file]

    def start(self):
        env = dict(os.environ, ROCKETMQ_HOME=self.home)
        env.pop("NAMESRV_ADDR", None)
        with open(self.out, "wb") as out:
            self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                                            cwd=self.store)
        return self

    def log(self):
        """What the broker printed and logged (4.9.8: ~/logs/rocketmqlogs/*/broker.log; 5.3.3: rocketmq.log)."""
        logs = glob.glob(os.path.join(self.store, "logs", "rocketmqlogs", "**", "broker.log"), recursive=True)
        paths = [self.out, *logs, os.path.join(self.store, "rocketmq.log")]
        return "\n".join(text for text in map(processes.read_log, paths) if text)

    def stop(self):
        processes.stop(self.process, timeout=20)


def mqadmin(version, *args, jvm_properties=None, timeout=120, home=None):
    """Run the peer's mqadmin.sh (``jvm_properties`` through JAVA_TOOL_OPTIONS, no NAMESRV_ADDR);
    the CompletedProcess, output as text."""
    peer_home = peer(version)
    env = dict(os.environ)
    env.pop("NAMESRV_ADDR", None)
    options = " ".join("-D%s=%s" % item for item in (jvm_properties or {}).items())
    if home is not None:
        options += " -Duser.home=%s" % home
    if options:
        env["JAVA_TOOL_OPTIONS"] = options.strip()
    return subprocess.run(["bash", os.path.join(peer_home, "mqadmin.sh"), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def traffic_classes(tmp_path):
    """tools/faultlab/java/Traffic.java (a producer and a reader, ours) compiled against the 5.3.3 peer's jars;
    the classpath to run it."""
    home = peer("5.3.3")
    out = tmp_path / "traffic"
    out.mkdir()
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "faultlab", "java",
                          "Traffic.java")
    subprocess.run(["javac", "-d", str(out), "-cp", os.path.join(home, "lib", "*"), source], check=True,
                   capture_output=True, timeout=120)
    return "%s:%s" % (out, os.path.join(home, "lib", "*"))


def traffic(classpath, *args, credentials=None):
    """Traffic.java ``send NAMESRV TOPIC COUNT PAUSE_MS`` or ``read NAMESRV TOPIC LIMIT_MS``, its stdout a pipe;
    signing with ``credentials`` ((accessKey, secretKey)) when given."""
    signing = ["-Dtraffic.accessKey=%s" % credentials[0], "-Dtraffic.secretKey=%s" % credentials[1]] \
        if credentials else []
    return subprocess.Popen(["java", "-Xmx128m", "-Drocketmq.client.logUseSlf4j=false", *signing, "-cp", classpath,
                             "Traffic", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def tally(line, acked, failed):
    """The producer's ACK/FAIL lines; anything else it prints (client logs) is not a send."""
    words = line.split()
    if len(words) >= 2 and words[0] in ("ACK", "FAIL"):
        (acked if words[0] == "ACK" else failed).append(words[1])


def stored_keys(classpath, namesrv, topic, credentials=None):
    """Every key the topic's queues hold, each queue read to its end offset (errors retried for up to 60 s)."""
    reader = traffic(classpath, "read", namesrv, topic, "60000", credentials=credentials)
    out, _ = reader.communicate(timeout=180)
    incomplete = [line for line in out.splitlines() if line.startswith("INCOMPLETE ")]
    assert not incomplete, "queues not readable to their end within 60 s: %s" % incomplete
    return {line.split()[1] for line in out.splitlines() if line.startswith("MSG ")}
def tools_home(tmp_path, name, access_key=None, secret_key=None):
    """A ROCKETMQ_HOME whose conf/tools.yml holds the credentials mqadmin signs with (none: no file)."""
    home = tmp_path / name
    (home / "conf").mkdir(parents=True)
    if access_key:
        (home / "conf" / "tools.yml").write_text("accessKey: %s\nsecretKey: %s\n" % (access_key, secret_key))
    return str(home)


def wait_for(predicate, within, what, every=0.5):
    """Ask ``predicate`` until it is true; a failure naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("%s: not within %ss" % (what, within))
        time.sleep(every)


def wait_listening(port, process, what, credentials=None):
    """Until the controller on ``port`` leads (asked with ``credentials`` when given: aclEnable=true)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "%s exited" % what
        try:
            with BlockingRemotingClient("127.0.0.1", port, timeout=2) as client:
                answer = client.call(signed_request(C.CONTROLLER_GET_METADATA_INFO, credentials=credentials))
            if answer.ext and answer.ext.get("isLeader") == "true":
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError("%s did not lead within 120 s" % what)
