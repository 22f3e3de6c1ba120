"""What an operator does to the controller group, done by the lab while the faults run (issue 56):
``namesrv-admin`` sent from the client's host, members started, stopped, wiped and forced.

Each schedule of ``schedules.MEMBERSHIP`` is a ``Fault`` whose ``run`` does the operator's part inside
the fault and whose ``heal`` undoes what needs undoing before the next cycle, so that every cycle starts
from a group of three. What each step did goes to the lab's own records (``lab.jsonl``: ``kind``
``group_op``), which the run reports beside the checkers: a step the group refused is a failed run.
"""

import json
import os
import shutil
import subprocess
import sys
import time

from tools.faultlab.cluster import REPO, wait_for


class StepFailed(RuntimeError):
    """An operator's step that did not do what it must (the run reports it)."""


def admin(state, *argv, timeout=30):
    """``namesrv-admin --json ARGV`` from the client's host: (exit status, parsed output or None, stderr)."""
    process = state.lab.spawn(state.client_host, [sys.executable, "-m", "namesrv.admin", "--json", "--timeout", "3"]
                              + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                              env=dict(os.environ, PYTHONPATH=REPO))
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    try:
        data = json.loads(out) if out.strip() else None
    except ValueError:
        data = None
    return process.returncode, data, err.strip()


def controllers(state):
    return ";".join(m.controller for m in state.members if m.running())


def until_done(state, what, argv, within=30.0):
    """Send ``argv`` until it succeeds (a change may be refused while another one, a transfer or an election
    is under way); the parsed answer."""
    deadline = time.monotonic() + within
    last = None
    while time.monotonic() < deadline:
        status, data, err = admin(state, *argv[:1], "-a", controllers(state), *argv[1:])
        if status == 0:
            return data
        last = err
        time.sleep(0.5)
    raise StepFailed("%s: not done within %s s: %s" % (what, within, last))


def members(state):
    data = until_done(state, "listControllers", ["listControllers"])
    return data


def note(state, step, **fields):
    state.lab_record("group_op", step=step, **fields)


def spare(state):
    return next(m for m in state.members if m.host not in state.in_group)


def add_member(state, member):
    """``member`` (not running) starts joining with its store moved aside, is added, catches up, is promoted."""
    if os.path.exists(member.store()):
        shutil.rmtree(member.store())
    peers = ";".join("%s-%s" % (m.member_id, m.controller) for m in state.members
                     if m.host in state.in_group) + ";%s-%s" % (member.member_id, member.controller)
    member.configure(controllerDLegerPeers=peers, controllerJoin="true")
    member.start()
    state.parked.discard(member.host)
    started = time.monotonic()
    until_done(state, "addController %s" % member.member_id,
               ["addController", "-i", member.member_id, "-r", member.controller])
    state.in_group.add(member.host)
    wait_for(lambda: _lag(state, member.member_id) == 0, 60, "%s caught up" % member.member_id, every=0.5)
    until_done(state, "promoteController %s" % member.member_id, ["promoteController", "-i", member.member_id])
    note(state, "added", member=member.member_id, seconds=round(time.monotonic() - started, 2))


def _lag(state, member_id):
    data = members(state)
    rows = {row["id"]: row for row in data.get("members") or []}
    row = rows.get(member_id)
    return row.get("lag") if row is not None else None


def remove_member(state, member):
    """The leader hands over first when ``member`` leads; then it is removed and stopped (parked)."""
    data = members(state)
    if data.get("leaderId") == member.member_id:
        transfer(state, "any")
    until_done(state, "removeController %s" % member.member_id, ["removeController", "-i", member.member_id])
    state.in_group.discard(member.host)
    state.parked.add(member.host)
    member.kill()
    note(state, "removed", member=member.member_id)


def leader_member(state):
    data = members(state)
    leader = data.get("leaderId")
    return next((m for m in state.members if m.member_id == leader), None)


def transfer(state, target="any"):
    """Leadership handed over; the record says when the answer came and how long the leader took
    (``millis``), which bounds the moment of the handover for the availability figures."""
    started = time.monotonic()
    before = leader_member(state)
    answer = until_done(state, "transferControllerLeader", ["transferControllerLeader", "--to", target])
    note(state, "transferred", frm=before.member_id if before else None, to=answer.get("leaderId"),
         seconds=round(time.monotonic() - started, 3), millis=answer.get("millis"), ended=time.monotonic())


def churn(state, count, prefix):
    """``count`` new log entries from the client's host (``churn.py``); True when all were committed."""
    process = state.lab.spawn(state.client_host, [sys.executable, "-m", "tools.faultlab.churn", "--controllers",
                                                  ",".join(m.controller for m in state.members), "--count", str(count),
                                                  "--prefix", prefix], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    return process.wait(120) == 0


def installed_snapshots(member):
    """How many snapshots ``member`` took from the leader, from its own log (its Raft store is its own)."""
    log = os.path.join(member.workdir, "twistd.log")
    try:
        with open(log, errors="replace") as f:
            return f.read().count("Raft snapshot received from the leader")
    except OSError:
        return 0


def force_new_group(state, survivor, lost):
    """The ``lost`` members die for good; ``survivor`` is restarted once with --force-new-controller-group."""
    for member in lost:
        member.kill()
        state.parked.add(member.host)
        state.in_group.discard(member.host)
    survivor.kill()
    survivor.start(extra=["--force-new-controller-group"])
    started = time.monotonic()
    wait_for(lambda: (members(state).get("leaderId") == survivor.member_id), 60, "the forced survivor leads",
             every=0.5)
    note(state, "forced", survivor=survivor.member_id, lost=[m.member_id for m in lost],
         seconds=round(time.monotonic() - started, 2))


def old_members_come_back(state, lost):
    """The lost members come back with their old stores, one at a time (as the runbook says: where the
    survivor reaches them): each must be fenced, never linked."""
    for member in lost:
        member.start()
        marker = os.path.join(member.store(), "fenced")
        try:
            wait_for(lambda: os.path.exists(marker), 30, "%s fenced" % member.member_id, every=0.5)
            note(state, "fenced", member=member.member_id, refused=True)
        except TimeoutError:
            note(state, "fenced", member=member.member_id, refused=False)
            raise StepFailed("%s came back with its old store and was not fenced" % member.member_id)
        member.kill()

