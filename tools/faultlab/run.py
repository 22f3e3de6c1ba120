"""One fault-lab run: hosts in namespaces, a controller group, a broker group, the agent, a seeded
schedule of faults, then the checkers.

The run prints its seed first; ``run(schedule, seed)`` with the same seed draws the same faults at
the same moments of the run (what the processes then do is up to them). Every namespace and process
is removed at the end, also when something fails.
"""

import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

from namesrv.controller.replication.identity import create_group_keys
from tools.faultlab import checkers
from tools.faultlab.cluster import (REPO, AgentProcess, FakeBrokerProcess, JavaBrokerProcess, Member, TrafficProcess,
                                    compile_traffic, read_back_java, wait_for)
from tools.faultlab.groupops import StepFailed
from tools.faultlab.netns import Lab
from tools.faultlab.records import JsonLines, read_jsonl
from tools.faultlab.schedules import MEMBERSHIP, SCHEDULES

#: the lab's members compact their Raft logs often in the membership schedules, so that snapshots are
#: written, sent and cut by faults within a run
#: a Java broker's REGISTER_BROKER period (registerNameServerPeriod's default; the fake broker registers every
#: second). A name server that forgot a broker (started again with a new store, or the broker's connection closed
#: while a cut kept them apart: ours and Java's alike) routes it again only from that broker's next registration.
REGISTRATION_PERIOD = 30.0
#: with Java brokers, the liveness check allows a registration period and a little after the last heal, and the
#: run goes on past that (a run that stopped its traffic 20 s after the heal failed by its own timing: issue 56)
JAVA_BOUND = REGISTRATION_PERIOD + 5.0
JAVA_SETTLE = JAVA_BOUND + 5.0
COMPACTING = {"controllerSnapshotEntries": "50", "controllerSnapshotIntervalSeconds": "5"}


class Run:
    def __init__(self, lab, members, brokers, agent, client_host, size=None, workdir=None):
        self.lab = lab
        self.members = members                  # the group's members, and spare ones the schedule may add
        self.brokers = brokers
        self.agent = agent
        self.client_host = client_host
        size = len(members) if size is None else size
        self.member_hosts = [m.host for m in members[:size]]
        self.in_group = set(self.member_hosts)  # hosts whose member belongs to the group's configuration
        self.parked = set()                     # hosts a heal does not restart (removed, or lost for good)
        self.broker_hosts = [b.host for b in brokers]
        self.all_hosts = [m.host for m in members] + self.broker_hosts + [client_host]
        self.traffic_path = None
        self.proxies = {}
        self.lab_path = os.path.join(workdir, "lab.jsonl") if workdir else None
        self.lab_record = JsonLines(self.lab_path, "kind") if workdir else (lambda *args, **kwargs: None)

    def records(self):
        records = read_jsonl(self.agent.out)
        if self.traffic_path:
            records += read_jsonl(self.traffic_path)
        return records

    def _latest(self, kind, within=3.0):
        now = time.monotonic()
        found = [r for r in self.records() if r["kind"] == kind and now - r["t"] <= within]
        return found[-1] if found else None

    def leader_host(self):
        meta = [r for r in self.records()[-400:] if r["kind"] == "metadata" and r["isLeader"]]
        if not meta:
            return None
        address = meta[-1]["controller"].rsplit(":", 1)[0]
        return next((m.host for m in self.members if m.address == address), None)

    def master_host(self):
        info = self._latest("replica_info")
        if info is None or not info.get("masterAddress"):
            return None
        return next((b.host for b in self.brokers if b.address == info["masterAddress"]), None)


def timing_for(brokers, settle, bound):
    """(settle, bound): how long the run goes on after its last heal, and how soon after it the liveness check
    wants a master routed everywhere; with Java brokers, at least a registration period and more (see
    REGISTRATION_PERIOD)."""
    if brokers == "java":
        return max(settle, JAVA_SETTLE), max(bound, JAVA_BOUND)
    return settle, bound


def run(schedule, seed, kind="ours", size=3, cycles=3, fault_seconds=(4.0, 8.0), heal_seconds=(4.0, 8.0),
        settle=20.0, bound=30.0, peer_home=None, workdir=None, log=print, brokers="fake", prefix=None):
    """A dict with the run's faults, checks and availability figures.

    ``kind``: whose name servers and controllers (``ours`` or ``java``, 5.3.3 from ``peer_home``);
    ``brokers``: ``fake`` (tools/faultlab/fakebroker.py) or ``java`` (5.3.3 brokers from ``peer_home``,
    with Traffic.java producing and reading back); ``prefix``: the lab's namespaces' (netns.run_prefix(): a
    test gives its own, to count only its namespaces)."""
    rng = random.Random(seed)
    settle, bound = timing_for(brokers, settle, bound)
    log("faultlab: %s, seed %d, %s controllers (%d), %s brokers" % (schedule, seed, kind, size, brokers))
    fake = brokers == "fake"
    own_workdir = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="faultlab-")
    spares = 1 if schedule == "member-added-during-partition" else 0
    member_hosts = ["n%d" % i for i in range(size + spares)]
    processes = []
    result = {}
    with Lab(member_hosts + ["b0", "b1", "cl"], prefix=prefix) as lab:
        try:
            secret = os.path.join(workdir, "controller.secret")
            with open(secret, "w") as f:
                f.write(secrets.token_hex(32))
            os.chmod(secret, 0o600)
            peers = ";".join("n%d-%s:9878" % (i, lab[h].address) for i, h in enumerate(member_hosts[:size]))
            keys = create_group_keys(workdir, ["n%d" % i for i in range(size + spares)])
            members = [Member(lab, h, i, peers, workdir, kind, peer_home, secret, keys)
                       for i, h in enumerate(member_hosts)]
            if schedule in MEMBERSHIP:
                for member in members:
                    member.configure(**COMPACTING)
            controllers, namesrvs = [m.controller for m in members[:size]], [m.namesrv for m in members[:size]]
            if fake:
                group = [FakeBrokerProcess(lab, h, "broker-a", workdir, controllers, namesrvs) for h in ("b0", "b1")]
            else:
                group = [JavaBrokerProcess(lab, h, "broker-a", workdir, controllers, namesrvs, peer_home)
                         for h in ("b0", "b1")]
                classpath = compile_traffic(peer_home, workdir)
            agent = AgentProcess(lab, "cl", workdir, members, group, seed, fake_brokers=fake)
            processes += group + members
            state = Run(lab, members, group, agent, "cl", size=size, workdir=workdir)
            state.parked.update(m.host for m in members[size:])
            if schedule in ("packet-loss", "mixed"):
                state.proxies = _start_proxies(lab, members, workdir, seed)
            for member in members[:size]:
                member.start()
            agent.start()
            wait_for(lambda: state.leader_host(), 90, "a controller leader")
            for broker in group:
                broker.start()
            wait_for(lambda: _in_sync(state), 120, "a master with both brokers in sync")
            if not fake:
                state.traffic_path = os.path.join(workdir, "traffic.jsonl")
                traffic = TrafficProcess(lab, "cl", classpath, namesrvs, state.traffic_path)
                processes.append(traffic)
            wait_for(lambda: sum(1 for r in state.records() if r["kind"] == "send" and r["ok"]) >= 20, 60,
                     "messages acknowledged")
            faults = []
            pick = SCHEDULES[schedule]
            failed_steps = []
            for cycle in range(cycles):
                fault = pick(rng, state)
                started = time.monotonic()
                faults.append({"t": started, "action": fault.description})
                log("  %5.1fs fault: %s" % (started - faults[0]["t"], fault.description))
                _step(state, failed_steps, _break, lab, state, fault)
                time.sleep(rng.uniform(*fault_seconds))
                _heal(lab, state)
                if fault.heal is not None:
                    _step(state, failed_steps, fault.heal, state)
                faults[-1]["healed"] = time.monotonic()
                log("  %5.1fs healed" % (faults[-1]["healed"] - faults[0]["t"]))
                time.sleep(rng.uniform(*heal_seconds))
            _heal(lab, state)
            healed_at = time.monotonic()
            time.sleep(settle)
            if not fake:
                traffic.stop()
                with open(os.path.join(workdir, "agent.jsonl"), "a") as out:
                    out.write(json.dumps(read_back_java(lab, "cl", classpath, namesrvs)) + "\n")
            agent.stop()
            for process in group + members:
                process.kill()
            agent_records = state.records()
            broker_events = {b.host: read_jsonl(b.events) for b in group}
            checks = checkers.run_all(agent_records, broker_events, healed_at, namesrvs, bound, fake_brokers=fake)
            if schedule in MEMBERSHIP:
                checks.append(checkers.group_operations(read_jsonl(state.lab_path), failed_steps))
            result = {"schedule": schedule, "seed": seed, "side": kind, "members": size, "brokers": brokers,
                      "faults": [f["action"] for f in faults],
                      "checks": {c.name: {"passed": c.passed, "details": c.details, "value": c.value} for c in checks},
                      "availability": checkers.availability(agent_records, faults),
                      "group_ops": [r for r in read_jsonl(state.lab_path) if r["kind"] == "group_op"],
                      "transfers": checkers.transfer_gaps(agent_records, read_jsonl(state.lab_path)),
                      "passed": all(checks), "workdir": workdir}
            for check in checks:
                log("  %-32s %s %s" % (check.name, "ok" if check else "FAILED",
                                        "; ".join(check.details) if check.details else (check.value or "")))
            return result
        finally:
            for process in processes:
                (process.stop if isinstance(process, TrafficProcess) else process.kill)()
            if own_workdir and result.get("passed"):
                shutil.rmtree(workdir, ignore_errors=True)


def _step(state, failed, action, *args):
    """One operator's step of a membership schedule; one that could not be done is recorded, not raised."""
    try:
        action(*args)
    except (StepFailed, TimeoutError) as e:
        failed.append(str(e))
        state.lab_record("group_op", step="failed", error=str(e))


def _in_sync(state):
    info = [r for r in state.records()[-200:] if r["kind"] == "replica_info"]
    return bool(info) and info[-1].get("masterId") is not None and len(info[-1].get("syncStateSet") or []) == 2


def _break(lab, state, fault):
    if fault.action == "partition":
        lab.partition(*fault.sides)
    elif fault.action == "cuts":
        for a, b in fault.sides:
            lab.cut(a, b)
    elif fault.action == "kill":
        for host in fault.targets:
            _process(state, host).kill()
    elif fault.action == "pause":
        for host in fault.targets:
            _process(state, host).pause()
    elif fault.action == "loss":
        for host in fault.targets:
            _proxy_settings(state, host, fault.settings)
    elif fault.action == "steps":
        for step in fault.steps:
            if step[0] == "cut":
                lab.cut(step[1], step[2])
            elif step[0] == "heal":
                lab.heal()
            elif step[0] == "kill":
                _process(state, step[1]).kill()
            elif step[0] == "wait":
                time.sleep(step[1])
    elif fault.action == "ops":
        fault.run(state)


def _heal(lab, state):
    lab.heal()
    for host in state.proxies:
        _proxy_settings(state, host, {})
    for process in state.members + state.brokers:
        if process.host in state.parked:
            continue
        process.resume()
        if not process.running():
            process.start()


PROXY_PORT = 19000


def _start_proxies(lab, members, workdir, seed):
    """A proxy in each member's host, in the path of its connections to the other members (clean until a fault)."""
    proxies = {}
    for member in members:
        control = os.path.join(member.workdir, "proxy.json")
        open(control, "w").close()
        lab.spawn(member.host, [sys.executable, "-m", "tools.faultlab.proxy", "--listen",
                                "127.0.0.1:%d" % PROXY_PORT, "--control", control, "--seed", str(seed)],
                  cwd=REPO, stdout=open(control + ".log", "ab"), stderr=subprocess.STDOUT)
        lab.through_proxy(member.host, [m.address for m in members if m is not member], 9878, PROXY_PORT)
        proxies[member.host] = control
    wait_for(lambda: all(os.path.exists(c + ".ready") for c in proxies.values()), 30, "the link proxies listening")
    return proxies


def _proxy_settings(state, host, settings):
    control = state.proxies.get(host)
    if control is not None:
        with open(control + ".tmp", "w") as f:
            json.dump(settings, f)
        os.replace(control + ".tmp", control)


def _process(state, host):
    return next(p for p in state.members + state.brokers if p.host == host)


def summary(results):
    return json.dumps(results, indent=1, sort_keys=True)
