"""Failover of a real 5.3.3 broker group: our embedded controller against Java's, in one run.

    python -m bench controller_failover --peer /tmp/peers/java5peer [--runs 3] [--scenario single|three|both]
                                        [--sides ours,java | ours,ours-acl | ...]

Each run, for each side: name servers with embedded controllers (``twistd namesrv`` or the peer's
Java NameServer with ``enableControllerInNamesrv=true``), two 5.3.3 brokers of one group in
controller mode (``allAckInSyncStateSet=true``), both in sync; then ``kill -9`` of the master
(``single``), or of the master and of the name server holding the controller leader (``three``).
Printed: seconds from the kill until a surviving name server routes the survivor as brokerId 0
(polled every 5 ms), and until the controller answers it as master. The brokers and the clients
are the same Java code on both sides; only the name servers and controllers differ.

``ours-acl`` is ours with ``aclEnable=true`` (every class signed, deny by default): the brokers sign with
``innerClientAuthenticationCredentials`` as a user allowed broker-control on broker-a, the benchmark's probes
as an admin (issue 54: failover at today's times with ACL on).
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

from bench.lib import options
from namesrv.client import ask, leader_port, routed_master
from namesrv.codec.fastjson import loads
from namesrv.controller.replication.identity import create_group_keys
from namesrv.protocol.codes import RequestCode
from tests.security.live import broker_user_acl

TWISTD = os.path.join(os.path.dirname(sys.executable), "twistd")
POLL = 0.005
SIDES = ("ours", "java", "ours-acl")
#: ours-acl: the brokers' user, and the admin the probes sign as
ACL_FILE = """accounts:
  - {accessKey: benchAdmin, secretKey: bench-admin-secret, admin: "true"}
users:
  - {username: benchBroker, password: bench-broker-secret}
acls:
""" + broker_user_acl("benchBroker", "broker-a")
ADMIN = ("benchAdmin", "bench-admin-secret")
BROKER_USER = ("benchBroker", "bench-broker-secret")


_handed_out = set()


def free_port(low=20000, high=32000, neighbours=(0,)):
    """A 127.0.0.1 port below 32768 (the brokers' limit) with ``port + n`` free for every n in ``neighbours``,
    none of them handed out before by this process (a port handed out may not be bound yet)."""
    for port in range(low + (os.getpid() * 13 + int(time.time() * 1000)) % 5000, high, 7):
        wanted = {port + n for n in neighbours} | {port - 1, port + 1}
        if wanted & _handed_out:
            continue
        try:
            for n in neighbours:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + n))
        except OSError:
            continue
        _handed_out.update(wanted)
        return port
    raise RuntimeError("no free port")


class Process:
    def __init__(self, argv, env=None, cwd=None, log=None):
        self.log = open(log, "wb") if log else subprocess.DEVNULL
        self.popen = subprocess.Popen(argv, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def kill(self):
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()


def controller_master(controller_ports, credentials=None):
    """(master address, in-sync count) as the serving controller leader answers, or (None, 0)."""
    for port in controller_ports:
        answer = ask(port, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"},
                     credentials=credentials)
        if answer is not None and answer.code == 0:
            members = loads(answer.body)["syncStateSet"] if answer.body else []
            return answer.ext.get("masterAddress"), len(members)
    return None, 0


def wait(predicate, within, what):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise RuntimeError("%s: not within %s s" % (what, within))


class Side:
    """Name servers with embedded controllers: ours (``acl``: with aclEnable=true) or Java's."""

    def __init__(self, kind, peer, workdir, count, acl=False):
        self.kind, self.peer, self.workdir = kind, peer, workdir
        self.credentials = ADMIN if acl else None     # the probes sign with these
        self.namesrv_ports = [free_port(neighbours=(0,)) for _ in range(count)]
        self.controller_ports = []
        while len(self.controller_ports) < count:
            port = free_port(neighbours=(0,) if kind == "ours" else (0, 1))
            if port not in self.namesrv_ports and port not in self.controller_ports:
                self.controller_ports.append(port)
        self.peers = ";".join("n%d-127.0.0.1:%d" % (i, p) for i, p in enumerate(self.controller_ports))
        self.processes = [None] * count
        self.secret = None
        if kind == "ours" and count > 1:
            # several controllers authenticate each other: a shared secret (controllerPeerSecretFile) and a key
            # per member (controllerMembersFile)
            self.secret = os.path.join(workdir, "controller.secret")
            with open(self.secret, "w") as f:
                f.write(os.urandom(32).hex())
            os.chmod(self.secret, 0o600)
            self.members = create_group_keys(workdir, ["n%d" % i for i in range(count)])

    def start(self, index):
        props = {"enableControllerInNamesrv": "true", "controllerDLegerGroup": "bench",
                 "controllerDLegerPeers": self.peers, "controllerDLegerSelfId": "n%d" % index,
                 "controllerStorePath": os.path.join(self.workdir, "%s-ctrl%d" % (self.kind, index))}
        log = os.path.join(self.workdir, "%s-ns%d.log" % (self.kind, index))
        port = self.namesrv_ports[index]
        if self.kind == "ours":
            run = os.path.join(self.workdir, "ours-ns%d" % index)
            os.makedirs(run, exist_ok=True)
            if self.secret:
                props["controllerPeerSecretFile"] = self.secret
                props["controllerMembersFile"] = self.members
            if self.credentials:
                acl_file = os.path.join(self.workdir, "plain_acl.yml")
                with open(acl_file, "w") as f:
                    f.write(ACL_FILE)
                props.update(aclEnable="true", aclFile=acl_file)
            props.update(listenPort=port, bindAddress="127.0.0.1", routeReadWorkers=0,
                         kvConfigPath=os.path.join(run, "kv.json"), logDir=os.path.join(run, "logs"),
                         routeSnapshotPath=os.path.join(run, "routes.snapshot"))
            conf = os.path.join(run, "namesrv.properties")
            with open(conf, "w") as f:
                f.writelines("%s=%s\n" % item for item in props.items())
            self.processes[index] = Process([TWISTD, "-n", "--pidfile=", "--logfile", log, "namesrv", "-c", conf],
                                            cwd=run)
        else:
            env = dict(os.environ, NAMESRV_EXTRA_PROPS="\n".join("%s=%s" % item for item in props.items()))
            self.processes[index] = Process(["bash", os.path.join(self.peer, "namesrv.sh"), str(port)], env=env,
                                            log=log)
        wait(lambda: ask(port, RequestCode.GET_BROKER_CLUSTER_INFO, timeout=1, credentials=self.credentials)
             is not None, 60,
             "%s name server %d listening" % (self.kind, index))

    def start_all(self):
        for index in range(len(self.namesrv_ports)):
            self.start(index)

    def stop_all(self):
        for process in self.processes:
            if process is not None:
                process.kill()


def broker(peer, workdir, name, port, namesrv, controllers, signing=False):
    store = os.path.join(workdir, name)
    props = {"enableControllerMode": "true", "controllerAddr": controllers, "brokerId": "-1",
             "allAckInSyncStateSet": "true", "syncBrokerMetadataPeriod": "2000", "checkSyncStateSetPeriod": "2000",
             "syncControllerMetadataPeriod": "2000"}
    if signing:
        return signing_broker(peer, workdir, store, name, port, dict(props, namesrvAddr=namesrv))
    env = dict(os.environ, BROKER_EXTRA_PROPS="\n".join("%s=%s" % item for item in props.items()))
    return Process(["bash", os.path.join(peer, "broker.sh"), namesrv, "broker-a", str(port), store, "BenchCluster"],
                   env=env, log=os.path.join(workdir, name + ".out"))


def signing_broker(peer, workdir, store, name, port, props):
    """A 5.3.3 broker signing with innerClientAuthenticationCredentials as BROKER_USER, started the way the
    Java-peer tests start one (the kit's broker.sh cannot add the user store such a broker needs to the
    classpath: tests/controller/java/MemoryUsers.java)."""
    # imported here: only ours-acl needs the test kit's launcher (it imports pytest)
    from tests.javapeers import JavaBroker, inner_credentials
    os.environ.setdefault("JAVAPEER5", peer)
    signing, classpath = inner_credentials(workdir, *BROKER_USER)
    java = JavaBroker("5.3.3", store, "broker-a", "BenchCluster", dict(props, **signing), port=port,
                      classpath=classpath)
    return Process(java.command(), env=dict(os.environ, ROCKETMQ_HOME=java.home), cwd=java.store,
                   log=os.path.join(workdir, name + ".out"))


def one_run(kind, scenario, peer):
    workdir = tempfile.mkdtemp(prefix="failover-%s-" % kind)
    acl = kind == "ours-acl"
    side = Side("ours" if acl else kind, peer, workdir, 3 if scenario == "three" else 1, acl=acl)
    credentials = side.credentials
    brokers = []
    try:
        side.start_all()
        namesrv = ";".join("127.0.0.1:%d" % p for p in side.namesrv_ports)
        controllers = ";".join("127.0.0.1:%d" % p for p in side.controller_ports)
        ports = []
        for i in range(2):
            port = free_port(low=20000 + 2000 * i, neighbours=(-2, 0, 1))
            ports.append(port)
            brokers.append(broker(peer, workdir, "b%d" % i, port, namesrv, controllers, signing=acl))
        started = time.monotonic()
        wait(lambda: routed_master(side.namesrv_ports[0], credentials=credentials), 90, "a master routed")
        master_up = time.monotonic() - started
        wait(lambda: controller_master(side.controller_ports, credentials)[1] == 2, 90, "both brokers in sync")
        master = routed_master(side.namesrv_ports[0], credentials=credentials)
        victim = 0 if master.endswith(":%d" % ports[0]) else 1
        survivor = "127.0.0.1:%d" % ports[1 - victim]
        killed = [brokers[victim]]
        surviving_ns = side.namesrv_ports
        if scenario == "three":
            leader = wait(lambda: leader_port(side.controller_ports, credentials), 30, "a controller leader")
            index = side.controller_ports.index(leader)
            killed.append(side.processes[index])
            surviving_ns = [p for i, p in enumerate(side.namesrv_ports) if i != index]
        time.sleep(3)      # let the group settle: both beating, both registered everywhere
        t0 = time.monotonic()
        for process in killed:
            process.kill()
        in_controller = routed = None
        while time.monotonic() - t0 < 120 and routed is None:
            if in_controller is None and controller_master(side.controller_ports, credentials)[0] == survivor:
                in_controller = time.monotonic() - t0
            if routed_master(surviving_ns[-1], credentials=credentials) == survivor:
                routed = time.monotonic() - t0
            time.sleep(POLL)
        return {"side": kind, "scenario": scenario, "master_up_s": round(master_up, 2),
                "controller_master_s": None if in_controller is None else round(in_controller, 3),
                "routed_as_0_s": None if routed is None else round(routed, 3)}
    finally:
        for process in brokers:
            process.kill()
        side.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


OPTIONS = (
    options.Option("--peer", "the 5.3.3 peer (java5peer) directory, $JAVAPEER5 if set",
                   default=os.environ.get("JAVAPEER5")),
    options.Option("--runs", "runs of each scenario, each on both sides", type=int, default=3),
    options.Option("--scenario", "kill the master (single), or the master and the controller leader's name server "
                   "(three)", choices=("single", "three", "both"), default="both"),
    options.Option("--sides", "comma-separated, in the order run: ours, java, ours-acl (ours with aclEnable=true)",
                   default="ours,java"),
    options.JSON,
)


def main(argv=None):
    parser = options.parser("controller_failover", __doc__, OPTIONS)
    args = parser.parse_args(argv)
    if not args.peer or not os.path.isfile(os.path.join(args.peer, "broker.sh")):
        parser.error("--peer (or $JAVAPEER5): the java5peer directory built by ../shared/javapeers/build.sh")
    scenarios = ("single", "three") if args.scenario == "both" else (args.scenario,)
    sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    if not sides or set(sides) - set(SIDES):
        parser.error("--sides: a comma-separated list of %s" % ", ".join(SIDES))
    print("%-8s %-7s %10s %18s %16s" % ("side", "scenario", "master up", "master in ctrl", "routed as 0"))
    for run in range(args.runs):
        for scenario in scenarios:
            for kind in sides:
                row = one_run(kind, scenario, args.peer)
                row["run"] = run + 1
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print("%-8s %-7s %9.1fs %17ss %15ss" % (kind, scenario, row["master_up_s"],
                                                            row["controller_master_s"], row["routed_as_0_s"]),
                          flush=True)


if __name__ == "__main__":
    main()
