"""Java's controller bug reports that one controller shows, against Apache RocketMQ 5.3.3's controller and ours.

    python -m bench controller_java_bugs --peer $JAVAPEER5 [--side both|ours|java] [--runs N]

Each side is one controller on 127.0.0.1 (Java's: the peer's DLedger ``controller.sh``; ours: ``twistd
controller``), driven with real frames by made-up brokers (their addresses are ports nobody listens on), one
broker group per scenario:

- ``stale_close`` (#11045): the master reconnects and beats on a new connection, then its old connection closes.
  Java 5.3.3 keeps the first connection in the broker's entry, evicts the live master and elects the slave.
- ``offset_overflow`` (#10578): the master dies; two in-sync slaves of one epoch, 2^31 + 1 bytes apart. Java
  5.3.3's comparator casts the difference to int and elects the one behind.
- ``hung_master`` (#10416's symptom): the master stops beating, its connection open; seconds until the slave is
  master (heartbeat timeout 3 s; Java's DLedger controller scans every 2 s here, the kit's setting).
- ``alter_race`` (#7219, #6342): two in-sync-set changes made from one epoch, pipelined: one must win, the other
  be fenced.
- ``dead_slave`` (#8380, #10875): the slave dies and the master lives: no election may follow (6 s watched).

Printed: one JSON object per scenario and side: what happened and whether it is what a correct controller does.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from bench.lib import options
from bench.scenarios.controller_failover import Process, free_port, wait
from namesrv.client import BlockingRemotingClient, ask
from namesrv.protocol.codes import RequestCode as C
from namesrv.protocol.command import make_request

TWISTD = os.path.join(os.path.dirname(sys.executable), "twistd")
CLUSTER = "BugCluster"


class Broker:
    """A made-up 5.x broker of ``group``: its id, its connection to the controller, its beats."""

    def __init__(self, port, group, number, timeout=10000):
        self.port, self.group, self.number, self.timeout = port, group, number, timeout
        self.address = "127.0.0.1:%d" % (40000 + number)
        self.client = BlockingRemotingClient("127.0.0.1", port, timeout=10)
        self.broker_id = None
        self.epoch, self.max_offset = 1, 0

    def call(self, code, ext=None, body=None):
        return self.client.call(make_request(code, ext=ext, body=body))

    def start(self):
        self.broker_id = int(self.call(C.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": CLUSTER,
                                                                          "brokerName": self.group}).ext["nextBrokerId"])
        applied = self.call(C.CONTROLLER_APPLY_BROKER_ID, {"clusterName": CLUSTER, "brokerName": self.group,
                                                           "appliedBrokerId": str(self.broker_id),
                                                           "registerCheckCode": "%s;1" % self.address})
        assert applied.code == 0, applied
        self.beat()
        self.call(C.CONTROLLER_REGISTER_BROKER, {"clusterName": CLUSTER, "brokerName": self.group,
                                                 "brokerId": str(self.broker_id), "brokerAddress": self.address})
        return self

    def beat(self):
        self.client.send(make_request(C.BROKER_HEARTBEAT, oneway=True, ext={
            "clusterName": CLUSTER, "brokerAddr": self.address, "brokerName": self.group,
            "brokerId": str(self.broker_id), "heartbeatTimeoutMills": str(self.timeout), "epoch": str(self.epoch),
            "maxOffset": str(self.max_offset), "electionPriority": "0"}))

    def elect(self):
        return self.call(C.CONTROLLER_ELECT_MASTER, {"clusterName": CLUSTER, "brokerName": self.group,
                                                     "brokerId": str(self.broker_id), "designateElect": "false"})

    def reconnect(self):
        old, self.client = self.client, BlockingRemotingClient("127.0.0.1", self.port, timeout=10)
        return old

    def alter_request(self, members, epoch, master_epoch=1):
        body = json.dumps({"syncStateSet": sorted(members), "syncStateSetEpoch": epoch}).encode()
        return make_request(C.CONTROLLER_ALTER_SYNC_STATE_SET, body=body, ext={
            "brokerName": self.group, "masterBrokerId": str(self.broker_id), "masterEpoch": str(master_epoch)})

    def close(self):
        self.client.close()


def replica_info(port, group):
    answer = ask(port, C.CONTROLLER_GET_REPLICA_INFO, {"brokerName": group}, timeout=5)
    if answer is None or answer.code != 0:
        return None, None
    return int(answer.ext.get("masterBrokerId", -1)), int(answer.ext.get("masterEpoch", 0))


def beat_for(brokers, seconds, every=0.5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for broker in brokers:
            broker.beat()
        time.sleep(every)


def group_of(port, group, count, timeout=10000):
    """``count`` brokers of ``group``, the first elected, all in the in-sync set; beating."""
    base = 10 * [name for name, _, _ in SCENARIOS].index(group.split("-", 1)[1])
    brokers = [Broker(port, group, base + i + 1, timeout).start() for i in range(count)]
    assert brokers[0].elect().code == 0
    beat_for(brokers, 1.0)
    grown = brokers[0].client.call(brokers[0].alter_request({b.broker_id for b in brokers}, 1))
    assert grown.code == 0, grown
    return brokers


def stale_close(port):
    brokers = group_of(port, "g-stale_close", 2)
    beat_for(brokers, 1.0)
    old = brokers[0].reconnect()
    beat_for(brokers, 1.5)
    old.close()                                        # the first connection's close arrives late
    beat_for(brokers, 4.0)
    master, epoch = replica_info(port, "g-stale_close")
    return {"masterAfter": master, "masterEpochAfter": epoch, "correct": (master, epoch) == (brokers[0].broker_id, 1)}


def offset_overflow(port):
    brokers = group_of(port, "g-offset_overflow", 3)
    behind, ahead = brokers[1], brokers[2]
    behind.max_offset, ahead.max_offset = 0, 2 ** 31 + 1
    beat_for(brokers, 1.5)
    brokers[0].close()                                 # the master dies: an election among 2 and 3
    beat_for(brokers[1:], 4.0)
    master, _ = replica_info(port, "g-offset_overflow")
    return {"elected": master, "aheadId": ahead.broker_id, "behindId": behind.broker_id,
            "correct": master == ahead.broker_id}


def hung_master(port):
    brokers = group_of(port, "g-hung_master", 2, timeout=3000)
    beat_for(brokers, 1.0)
    hung = time.monotonic()                            # the master stops beating; its connection stays open
    while time.monotonic() - hung < 30:
        brokers[1].beat()
        if replica_info(port, "g-hung_master")[0] == brokers[1].broker_id:
            return {"secondsToNewMaster": round(time.monotonic() - hung, 2), "correct": True}
        time.sleep(0.05)
    return {"secondsToNewMaster": None, "correct": False}


def alter_race(port):
    brokers = group_of(port, "g-alter_race", 3)
    master = brokers[0]
    shrink = master.alter_request({master.broker_id}, 2)
    other = master.alter_request({master.broker_id, brokers[2].broker_id}, 2)
    first, second = master.client.send(shrink), master.client.send(other)
    answers = {}
    while len(answers) < 2:
        answer = master.client.receive()
        answers[answer.opaque] = answer.code
    codes = [answers[first], answers[second]]
    return {"codes": codes, "correct": sorted(codes) == [0, 2001]}


def dead_slave(port):
    brokers = group_of(port, "g-dead_slave", 2)
    beat_for(brokers, 1.0)
    brokers[1].close()
    beat_for(brokers[:1], 6.0)
    master, epoch = replica_info(port, "g-dead_slave")
    return {"masterAfter": master, "masterEpochAfter": epoch, "correct": (master, epoch) == (brokers[0].broker_id, 1)}


SCENARIOS = [("stale_close", "#11045", stale_close), ("offset_overflow", "#10578", offset_overflow),
             ("hung_master", "#10416", hung_master), ("alter_race", "#7219 #6342", alter_race),
             ("dead_slave", "#8380 #10875", dead_slave)]


def start(side, peer, workdir):
    port = free_port()
    if side == "java":
        process = Process(["bash", os.path.join(peer, "controller.sh"), str(port), os.path.join(workdir, "java")],
                          log=os.path.join(workdir, "java.log"))
    else:
        conf = os.path.join(workdir, "ours.properties")
        with open(conf, "w") as f:
            f.write("controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n0\n"
                    "controllerStorePath=%s\nlogDir=%s\nconfigStorePath=%s\n" % (
                        port, os.path.join(workdir, "ours"), os.path.join(workdir, "logs"),
                        os.path.join(workdir, "c.conf")))
        process = Process([TWISTD, "-n", "--pidfile=", "--logfile", os.path.join(workdir, "ours.log"), "controller",
                           "-c", conf], cwd=workdir)
    # leading, and serving what only a leader serves (Java's says it leads a moment before it does)
    wait(lambda: (lambda a: a is not None and a.code == 0)(
        ask(port, C.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": CLUSTER, "brokerName": "probe"})), 120,
        "%s's controller leading" % side)
    return process, port


OPTIONS = (
    options.Option("--peer", "the 5.3.3 peer (java5peer) directory, $JAVAPEER5 if set",
                   default=os.environ.get("JAVAPEER5")),
    options.Option("--side", "whose controller", choices=("both", "ours", "java"), default="both"),
    options.Option("--runs", "runs of every scenario", type=int, default=1),
)


def main(argv=None):
    parser = options.parser("controller_java_bugs", __doc__, OPTIONS)
    args = parser.parse_args(argv)
    sides = ("java", "ours") if args.side == "both" else (args.side,)
    if "java" in sides and not (args.peer and os.path.isfile(os.path.join(args.peer, "controller.sh"))):
        parser.error("--peer (or $JAVAPEER5): an Apache RocketMQ 5.3.3 peer kit with controller.sh")
    for run in range(args.runs):
        for side in sides:
            workdir = tempfile.mkdtemp(prefix="controller-java-bugs-")
            process, port = start(side, args.peer, workdir)
            try:
                for name, report, scenario in SCENARIOS:
                    try:
                        outcome = scenario(port)
                    except (AssertionError, OSError, ValueError, TypeError, AttributeError) as e:
                        outcome = {"error": repr(e), "correct": False}
                    print(json.dumps(dict(outcome, scenario=name, report=report, side=side, run=run)), flush=True)
            finally:
                process.kill()
                subprocess.run(["rm", "-rf", workdir])


if __name__ == "__main__":
    main()
