"""A month of a big fleet's elections in the controllers' Raft store: does it stay bounded, and how fast does a
member restart and serve from it?

    python -m bench controller_store [--groups 1000] [--days 30] [--failovers-per-day 4] [--json]

Three controllers with the default properties (controllerSnapshotEntries, controllerSnapshotBytes,
controllerSnapshotIntervalSeconds, controllerStoreMaxBytes: 64 MiB), on 127.0.0.1 with their stores on
this machine's disk. First they run in this process, as Raft members over real member links, while this
process proposes what ``--groups`` broker groups go through in ``--days`` days: each group's two brokers
get their ids, the first is elected and both are put in sync; then every group fails over
``--failovers-per-day`` times a day (a new master elected, then both replicas back in the in-sync set:
two events each, proposed one at a time as the controller proposes them, 64 in flight). Every half
second the size of each member's store directory (journal, snapshot and any temporary copy) is taken.

Then the same stores are served by three ``twistd controller`` processes, and the scenario times: the
whole group's start until a leader serves; a follower killed (-9) and started again until it serves
(it answers that the group has a leader, and the leader sees its log with no lag); the leader killed
and started again likewise (the others elect another meanwhile).

Printed: the events and entries proposed, the largest store of any member at any time and the bound,
the snapshots written, and the three restart times.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from twisted.internet import defer, reactor, task

from bench.lib import options
from bench.scenarios.controller_failover import free_port
from namesrv.client import ask
from namesrv.config import NamesrvConfig
from namesrv.controller.replication.identity import MemberIdentity, create_group_keys
from namesrv.controller.replication.raft import RaftLog
from namesrv.controller.service import raft_timing
from namesrv.controller.state import ReplicaState
from namesrv.protocol.codes import RequestCode
from tests.controller.livegroup import members_only

TWISTD = os.path.join(os.path.dirname(sys.executable), "twistd")
IDS = ("n0", "n1", "n2")
CLUSTER = "StoreCluster"


def store_bytes(directory):
    """Bytes of every file under ``directory`` (a member's store)."""
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def events_of(groups, days, per_day):
    """The events, in the order the controller would propose them: first every group's start, then the
    failovers day after day, spread over the groups."""
    for g in range(groups):
        name = "broker-%04d" % g
        for broker_id in (1, 2):
            address = "10.%d.%d.%d:10911" % (g // 250, g % 250, broker_id)
            yield {"type": "apply_broker_id", "clusterName": CLUSTER, "brokerName": name, "brokerId": broker_id,
                   "brokerAddress": address, "registerCheckCode": "%s;%d" % (address, 1700000000000 + g)}
        yield {"type": "elect_master", "brokerName": name, "newMasterId": 1}
        yield {"type": "alter_sync_state_set", "brokerName": name, "syncStateSet": [1, 2]}
    master = {g: 1 for g in range(groups)}
    for _ in range(days * per_day):
        for g in range(groups):
            name = "broker-%04d" % g
            master[g] = 3 - master[g]
            yield {"type": "elect_master", "brokerName": name, "newMasterId": master[g]}
            yield {"type": "alter_sync_state_set", "brokerName": name, "syncStateSet": [1, 2]}


class Group:
    """The three members' properties, keys and stores (what both phases use)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.ports = {m: free_port() for m in IDS}
        self.peers = ";".join("%s-127.0.0.1:%d" % (m, self.ports[m]) for m in IDS)
        self.secret = os.path.join(workdir, "controller.secret")
        with open(self.secret, "w") as f:
            f.write(os.urandom(32).hex())
        os.chmod(self.secret, 0o600)
        self.members = create_group_keys(workdir, IDS)

    def store(self, member):
        """controllerStorePath: one per member (a running instance claims its own)."""
        return os.path.join(self.workdir, "store-" + member)

    def properties(self, member):
        return {"controllerDLegerGroup": "store", "controllerDLegerPeers": self.peers,
                "controllerDLegerSelfId": member, "controllerStorePath": self.store(member),
                "controllerPeerSecretFile": self.secret, "controllerMembersFile": self.members}

    def member_store(self, member):
        return os.path.join(self.store(member), member)


# -- phase 1: a month of events through three members in this process ------------------------------------------
@defer.inlineCallbacks
def generate(group, events, inflight=64):
    config = NamesrvConfig()
    timing = raft_timing(config)
    secret = open(group.secret, "rb").read().strip()
    peers = {m: "127.0.0.1:%d" % group.ports[m] for m in IDS}
    logs, ports = {}, []
    for member in IDS:
        identity = MemberIdentity(member, os.path.join(group.workdir, member + ".key"), group.members)
        log = RaftLog(ReplicaState(), group.member_store(member), member, peers, "store", reactor, secrets=[secret],
                      identity=identity, timing=timing)
        logs[member] = log
        ports.append(reactor.listenTCP(group.ports[member], members_only(log.mesh),
                                       interface="127.0.0.1"))
    for log in logs.values():
        log.start()
    largest = {"bytes": 0}
    sampler = task.LoopingCall(lambda: largest.__setitem__("bytes", max(
        largest["bytes"], *(store_bytes(group.member_store(m)) for m in IDS))))
    sampler.start(0.5)
    proposed = 0
    started = time.monotonic()
    pending = set()
    for event in events:
        while True:
            leader = next((log for log in logs.values() if log.is_leader), None)
            if leader is not None and len(pending) < inflight:
                break
            yield task.deferLater(reactor, 0.005, lambda: None)
        d = leader.propose([event])
        pending.add(d)
        d.addBoth(lambda result, d=d: pending.discard(d))
        proposed += 1
    while pending:
        yield task.deferLater(reactor, 0.05, lambda: None)
    yield task.deferLater(reactor, 1.0, lambda: None)
    sampler.stop()
    leader = next(log for log in logs.values() if log.is_leader)
    status = leader.status()
    result = {"events": proposed, "seconds_to_propose": round(time.monotonic() - started, 1),
              "largest_store_bytes_while_writing": largest["bytes"], "groups_in_state": len(leader.state.groups),
              "snapshots_written": status["store"]["snapshotsWritten"], "store_max_bytes": timing.store_max_bytes,
              "leader_journal_bytes": status["store"]["journalBytes"],
              "leader_snapshot_bytes": status["store"]["snapshotBytes"]}
    for log in logs.values():
        yield log.stop()
    for port in ports:
        yield port.stopListening()
    result["log_entries"] = status.get("commitIndex")
    return result


# -- phase 2: the stores served by twistd controller processes -----------------------------------------------------
class Process:
    def __init__(self, group, member):
        self.group, self.member = group, member
        self.conf = os.path.join(group.workdir, "%s.properties" % member)
        with open(self.conf, "w") as f:
            f.writelines("%s=%s\n" % item for item in group.properties(member).items())
        self.process = None

    def start(self):
        out = open(os.path.join(self.group.workdir, "%s.out" % self.member), "ab")
        self.process = subprocess.Popen([TWISTD, "-n", "--pidfile=", "--logfile",
                                         os.path.join(self.group.workdir, "%s.log" % self.member), "controller", "-c",
                                         self.conf], cwd=self.group.workdir, stdout=out, stderr=subprocess.STDOUT)
        return time.monotonic()

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    @property
    def port(self):
        return self.group.ports[self.member]


def metadata(port):
    answer = ask(port, RequestCode.CONTROLLER_GET_METADATA_INFO, timeout=0.5)
    return answer.ext if answer is not None else None


def members_of(port):
    answer = ask(port, RequestCode.CONTROLLER_LIST_MEMBERS, timeout=0.5)
    try:
        return json.loads(answer.body) if answer is not None else None
    except (ValueError, TypeError):
        return None


def leader_port(group):
    for member in IDS:
        meta = metadata(group.ports[member])
        if meta and meta.get("isLeader") == "true":
            return group.ports[member]
    return None


def serves(group, member):
    """``member`` knows the group's leader, and the leader sees its log with no lag."""
    meta = metadata(group.ports[member])
    if not meta or not meta.get("controllerLeaderId"):
        return False
    port = leader_port(group)
    listing = members_of(port) if port is not None else None
    rows = {row["id"]: row for row in (listing or {}).get("members") or []}
    return member in rows and rows[member].get("lag") == 0


def until(condition, within=60.0, every=0.01):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(every)
    raise TimeoutError("not within %s s" % within)


def restarts(group):
    processes = {m: Process(group, m) for m in IDS}
    try:
        started = min(p.start() for p in processes.values())
        whole = until(lambda: all(serves(group, m) for m in IDS), within=120) - started
        leader = next(m for m in IDS if group.ports[m] == leader_port(group))
        follower = next(m for m in IDS if m != leader)
        processes[follower].kill()
        started = processes[follower].start()
        follower_back = until(lambda: serves(group, follower)) - started
        processes[leader].kill()
        started = processes[leader].start()
        leader_back = until(lambda: serves(group, leader) and leader_port(group) is not None) - started
        sizes = {m: store_bytes(group.member_store(m)) for m in IDS}
    finally:
        for process in processes.values():
            process.kill()
    return {"group_start_to_serving_seconds": round(whole, 2), "follower_restart_to_serving_seconds":
            round(follower_back, 2), "leader_restart_to_serving_seconds": round(leader_back, 2),
            "store_bytes_after": sizes}


OPTIONS = (
    options.Option("--groups", "broker groups, each of two brokers", type=int, default=1000),
    options.Option("--days", "days of elections generated", type=int, default=30),
    options.Option("--failovers-per-day", "elections a group has a day", type=int, default=4),
    options.Option("--keep", "keep the stores (their directory is printed)", action="store_true"),
)


def main(argv=None):
    args = options.parse("controller_store", __doc__, OPTIONS, argv)
    workdir = tempfile.mkdtemp(prefix="controller-store-")
    group = Group(workdir)
    box = {}

    def phase_one():
        d = generate(group, events_of(args.groups, args.days, args.failovers_per_day))
        d.addCallbacks(lambda r: box.setdefault("result", r), lambda f: box.setdefault("error", f))
        d.addBoth(lambda _: reactor.stop())
    reactor.callWhenRunning(phase_one)
    reactor.run()
    if "error" in box:
        box["error"].raiseException()
    result = dict(box["result"], groups=args.groups, days=args.days, failovers_per_day=args.failovers_per_day,
                  load_before=os.getloadavg()[0])
    result.update(restarts(group))
    result["within_bound"] = result["largest_store_bytes_while_writing"] <= result["store_max_bytes"]
    if args.keep:
        result["workdir"] = workdir
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
