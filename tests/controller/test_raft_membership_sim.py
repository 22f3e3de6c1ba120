"""The controller group changed while it runs, on the simulated network and disks: learners added and
promoted, members removed, leadership handed over, snapshots cut by crashes and power cuts at any point,
and a survivor forcing a new group after the others are lost.

Every step of every run checks Raft's safety and the membership invariants (``raftsim.SimGroup.step``):
one leader per term whatever configuration elected it, at most one uncommitted configuration entry on
a leader, and committed configurations that follow each other differing by one voter at most (the same
configuration at each index on every member). A failing run names its seed.
"""

import random

import pytest

from namesrv.controller.replication import snapshot
from namesrv.controller.replication.changes import ChangeRefused
from namesrv.controller.replication.codec import unpack
from namesrv.controller.replication.disk import MemoryDisk
from namesrv.controller.replication.journal import decode_records
from namesrv.controller.replication.raft import RaftTiming
from tests.controller.raftsim import apply_id


def _settle(d, g, limit=10.0):
    """Run until the Deferred ``d`` fires; its result, or its failure's exception."""
    box = []
    d.addCallbacks(box.append, lambda failure: box.append(failure.value))
    g.run_until(lambda: box, limit)
    return box[0]


class Writer:
    """A client proposing new broker ids on whichever member serves as leader; what was acknowledged."""

    def __init__(self, g, name="b"):
        self.g, self.name = g, name
        self.boxes = []

    def write(self):
        leaders = self.g.leaders()
        if not leaders:
            return
        broker_id = len(self.boxes) + 1
        box = self.g.propose(leaders[0], [apply_id(self.name, broker_id)])
        self.boxes.append((broker_id, box))

    def acknowledged(self):
        return {broker_id for broker_id, box in self.boxes if box and box[0][0] == "ok"}


def _members(g):
    """The running members of the configuration the leader has in force."""
    leader = g.leader()
    return [m for m in g.logs[leader].configuration.members if m in g.logs]


def held_by_members(g, ids, name="b"):
    """Every acknowledged id on every running member of the configuration, and those members' states the same."""
    members = _members(g)
    g.run_until(lambda: len({g.logs[m].state.applied for m in members}) == 1, limit=20.0)
    states = [g.logs[m].state.to_dict() for m in members]
    assert all(state == states[0] for state in states), "members' states differ (seed %d)" % g.seed
    for member in members:
        group = g.logs[member].state.groups.get(name)
        missing = ids - (set(group.brokers) if group is not None else set())
        assert not missing, "member %s lost acknowledged ids %s (seed %d)" % (member, sorted(missing), g.seed)


def _add(g, member, promote=True):
    """Start ``member`` as a joining learner (its peers: the group as it is, and itself), add it, wait for it to
    catch up, promote it."""
    leader = g.leader()
    g.start(member, join=True, peers=dict(g.logs[leader].configuration.addresses(), **{member: g.addresses[member]}))
    result = _settle(g.logs[leader].changes.add(member, g.addresses[member]), g)
    assert not isinstance(result, Exception), "%s (seed %d)" % (result, g.seed)
    if not promote:
        return
    g.run_until(lambda: _caught_up(g, member), limit=20.0)
    leader = g.leader()
    result = _settle(g.logs[leader].changes.promote(member), g)
    assert not isinstance(result, Exception), "%s (seed %d)" % (result, g.seed)


def _caught_up(g, member):
    leaders = g.leaders()
    if not leaders:
        return False
    rows = {row["id"]: row for row in g.logs[leaders[0]].changes.members_status()}
    return member in rows and rows[member]["lag"] == 0


def test_a_group_grows_from_three_to_five_through_learners_while_clients_write(sim):
    g = sim(seed=11, spare=2)
    writer = Writer(g)
    g.leader()
    for _ in range(20):
        writer.write()
        g.run(0.01)
    _add(g, "n3")
    for _ in range(10):
        writer.write()
        g.run(0.01)
    _add(g, "n4")
    g.run(1.0)
    leader = g.leader()
    assert g.logs[leader].configuration.voters() == ["n0", "n1", "n2", "n3", "n4"]
    assert all(g.logs[m].configuration.voters() == ["n0", "n1", "n2", "n3", "n4"] for m in g.logs)
    held_by_members(g, writer.acknowledged())
    # five voters: two may go, and the rest still commit
    for member in [m for m in g.ids if m != leader][:2]:
        g.crash(member)
    for _ in range(5):
        writer.write()
        g.run(0.02)
    g.run(2.0)
    assert len(writer.acknowledged()) >= 30 and not g.violations, g.violations


def test_a_learner_is_refused_promotion_until_it_caught_up_and_never_counts_for_a_majority(sim):
    g = sim(seed=12, spare=1)
    writer = Writer(g)
    leader = g.leader()
    for _ in range(30):
        writer.write()
        g.run(0.005)
    g.start("n3", join=True)
    g.pause("n3")                              # it cannot catch up while paused
    assert not isinstance(_settle(g.logs[leader].changes.add("n3", g.addresses["n3"]), g), Exception)
    with pytest.raises(ChangeRefused, match="has not caught up"):
        g.logs[g.leader()].changes.promote("n3")
    g.resume("n3")
    g.run_until(lambda: _caught_up(g, "n3"))
    leader = g.leader()
    for voter in [m for m in g.ids if m != leader]:
        g.crash(voter)
    box = g.propose(leader, [apply_id("b", 999)])
    g.run(3.0)
    assert not box or box[0][0] == "failed", "committed with a learner's acknowledgement (seed %d)" % g.seed
    assert not g.violations, g.violations


def test_a_member_far_behind_the_snapshot_joins_from_it(sim):
    g = sim(seed=13, spare=1, timing=RaftTiming(compaction_entries=10, compaction_seconds=1))
    writer = Writer(g)
    g.leader()
    for _ in range(60):
        writer.write()
        g.run(0.01)
    g.run(2.0)                                # compacted: the log no longer starts at entry 1
    assert g.logs[g.leader()]._journal[0][1] > 1
    _add(g, "n3")
    assert g.logs["n3"].snapshots_loaded >= 1, "the new member caught up without a snapshot"
    held_by_members(g, writer.acknowledged())
    assert not g.violations, g.violations


def test_removing_the_leader_is_refused_until_it_handed_over_and_one_change_waits_for_the_other(sim):
    g = sim(seed=14, spare=2)
    writer = Writer(g)
    leader = g.leader()
    with pytest.raises(Exception, match="transferControllerLeader"):
        g.logs[leader].changes.remove(leader)
    first = g.logs[leader].changes.add("n3", g.addresses["n3"])
    with pytest.raises(Exception, match="one change at a time"):
        g.logs[leader].changes.add("n4", g.addresses["n4"])
    assert not isinstance(_settle(first, g), Exception)
    target = next(m for m in g.ids if m != leader)
    new = _settle(g.logs[leader].transfer_leadership(target), g)
    assert new == target, "%s (seed %d)" % (new, g.seed)
    assert g.leader() == target
    assert not isinstance(_settle(g.logs[target].changes.remove(leader), g), Exception)
    g.run(1.0)
    assert leader not in g.logs[target].configuration.members
    assert not g.logs[leader].mesh.links, "the removed member still has links"     # refused from now on
    for _ in range(5):
        writer.write()
        g.run(0.02)
    held_by_members(g, writer.acknowledged())
    assert g.leaders() == [target] and not g.violations, g.violations


@pytest.mark.parametrize("seed", range(10))
def test_a_transfer_under_load_leaves_a_short_write_gap(sim, seed):
    """Clients write every 5 ms; the leader hands over. The gap between the last write the old leader
    acknowledged and the first the new one did is far shorter than an election timeout (0.4-1.4 s)."""
    g = sim(seed=500 + seed)
    writer = Writer(g)
    leader = g.leader()
    for _ in range(20):
        writer.write()
        g.run(0.005)
    d = g.logs[leader].transfer_leadership("any")
    new = []
    d.addBoth(new.append)
    while not new or len(writer.acknowledged()) < 40:
        writer.write()
        g.run(0.005)
    assert new[0] != leader and isinstance(new[0], str), "%s (seed %d)" % (new[0], g.seed)
    acks = sorted(box[0][2] for _, box in writer.boxes if box and box[0][0] == "ok")
    gap = max(b - a for a, b in zip(acks, acks[1:]))
    assert gap < g.timing.min_timeout / 2, "a write gap of %.3f s (seed %d)" % (gap, g.seed)
    held_by_members(g, writer.acknowledged())
    assert not g.violations, g.violations


def test_a_transfer_that_cannot_finish_is_abandoned_and_the_leader_serves_again(sim):
    g = sim(seed=15, timing=RaftTiming(transfer_timeout=0.5))
    writer = Writer(g)
    leader = g.leader()
    target = next(m for m in g.ids if m != leader)
    g.pause(target)                       # it never gets to stand for election
    result = _settle(g.logs[leader].transfer_leadership(target), g, limit=5.0)
    assert "abandoned" in str(result)
    g.run_until(lambda: g.logs[leader].is_leader, limit=1.0)
    assert g.leader() == leader
    g.resume(target)
    for _ in range(10):
        writer.write()
        g.run(0.01)
    g.run(1.0)
    held_by_members(g, writer.acknowledged())
    assert g.leaders() == [leader] and not g.violations, g.violations


@pytest.mark.parametrize("seed", range(30))
def test_membership_changes_under_faults_keep_every_invariant(sim, seed):
    """Learners added and promoted, members removed, leadership handed over, while members crash, lose
    power, pause and are cut off; clients keep writing. Nothing acknowledged is lost."""
    g = sim(seed=600 + seed, spare=2, disk_latency=0.004)
    rng = random.Random(seed)
    writer = Writer(g)
    pending = []
    down = set()
    g.leader()
    for step in range(60):
        for _ in range(rng.randrange(1, 6)):
            writer.write()
            g.run(rng.uniform(0.0, 0.02))
        leaders = g.leaders()
        action = rng.choice(["add", "promote", "remove", "transfer", "crash", "power", "cut", "pause", "idle"])
        if leaders and action in ("add", "promote", "remove", "transfer"):
            log = g.logs[leaders[0]]
            configuration = log.configuration
            try:
                if action == "add":
                    candidates = [m for m in g.ids + g.spares if m not in configuration.members]
                    if candidates:
                        member = rng.choice(candidates)
                        if member not in g.logs:        # started as docs/controller.md says: the group as it is
                            g.start(member, join=True, peers=dict(configuration.addresses(),
                                                                  **{member: g.addresses[member]}))
                        pending.append(log.changes.add(member, g.addresses[member]))
                elif action == "promote" and configuration.learners():
                    pending.append(log.changes.promote(rng.choice(configuration.learners())))
                elif action == "remove":
                    others = [m for m in configuration.members if m != leaders[0]]
                    if len(configuration.voters()) > 3 or configuration.learners():
                        pending.append(log.changes.remove(rng.choice(others)))
                elif action == "transfer":
                    pending.append(log.transfer_leadership(rng.choice(["any"] + configuration.voters())))
            except Exception:
                pass                                   # refused now (not caught up, one pending...)
        elif action in ("crash", "power") and not down:
            victim = rng.choice(list(g.logs))
            (g.crash if action == "crash" else g.power_cut)(victim)
            down.add(victim)
        elif action == "cut":
            g.net.partition(*_halves(rng, list(g.logs)))
        elif action == "pause":
            victim = rng.choice(list(g.logs))
            g.pause(victim)
            g.run(rng.uniform(0.1, 1.0))
            g.resume(victim)
        g.run(rng.uniform(0.05, 0.5))
        if rng.random() < 0.4:
            g.net.heal()
        if down and rng.random() < 0.5:
            g.restart(down.pop())
    g.net.heal()
    for member in down:
        g.restart(member)
    g.run(3.0)
    for d in pending:
        d.addErrback(lambda failure: None)
    held_by_members(g, writer.acknowledged())
    assert len(writer.acknowledged()) > 20
    assert not g.violations, g.violations


def _halves(rng, ids):
    shuffled = list(ids)
    rng.shuffle(shuffled)
    cut = rng.randrange(1, len(shuffled))
    return shuffled[:cut], shuffled[cut:]


@pytest.mark.parametrize("seed", range(20))
def test_a_crash_or_power_cut_at_any_point_of_a_snapshot_loses_nothing_acknowledged(sim, seed):
    """Snapshots every 10 entries; whenever one is being written, the member it is written on (or the whole
    group, every other time) crashes or loses power somewhere in that write: before its fsync, between the
    fsync and the rename, after it, or in the journal's rewrite behind it. Each member starts again from what
    its disk kept, and nothing acknowledged is lost."""
    g = sim(seed=700 + seed, disk_latency=0.01, timing=RaftTiming(compaction_entries=10, compaction_seconds=1))
    rng = random.Random(seed)
    writer = Writer(g)
    cuts = []

    def watch(member):
        def on_write(ops):
            if any(op[0] == "file" for op in ops) and member in g.logs and len(cuts) < 12:
                cuts.append(member)
                # within the snapshot's write, between it and the journal's rewrite (the next tick), or in that
                # rewrite: the disk takes 10 ms a batch, pysyncobj ticks every 20 ms
                g.clock.callLater(rng.uniform(0.0, 0.045), strike, member)
        return on_write

    def strike(member):
        if member not in g.logs:
            return
        victims = list(g.logs) if len(cuts) % 2 == 0 else [member]
        for victim in victims:
            (g.power_cut if rng.random() < 0.5 else g.crash)(victim)
        g.clock.callLater(rng.uniform(0.05, 0.5), restart, victims)

    def restart(victims):
        for victim in victims:
            if victim not in g.logs:
                g.restart(victim)

    for member in g.ids:
        g.disks[member].on_write = watch(member)
    g.leader()
    end = g.clock.seconds() + 25
    while g.clock.seconds() < end:
        writer.write()
        g.run(rng.uniform(0.0, 0.03))
    g.run(2.0)
    for member in g.ids:
        if member not in g.logs:
            g.restart(member)
    g.run(3.0)
    assert cuts, "no snapshot was cut (seed %d)" % g.seed
    assert sum(disk.operations["file"] for disk in g.disks.values()) > 0
    held_by_members(g, writer.acknowledged())
    assert len(writer.acknowledged()) > 50 and not g.violations, g.violations


@pytest.mark.parametrize("seed", range(20))
def test_a_survivor_forces_a_new_group_keeps_what_it_acknowledged_and_fences_the_others(sim, seed):
    """Two of three members are lost for good; the survivor is forced into a group of one. It keeps every
    event its journal held (acknowledged to the leader or not), serves alone, refuses the old members when
    they come back with their old stores (they learn that they were fenced), and grows back with members
    whose stores start empty."""
    g = sim(seed=800 + seed, spare=2, disk_latency=0.004)
    rng = random.Random(seed)
    writer = Writer(g)
    g.leader()
    for _ in range(rng.randrange(10, 40)):
        writer.write()
        g.run(rng.uniform(0.0, 0.02))
    survivor = rng.choice(g.ids)
    lost = [m for m in g.ids if m != survivor]
    for member in lost:
        g.crash(member)
    g.crash(survivor)
    kept = _ids_in(g.disks[survivor])
    g.restart(survivor, force=True)
    g.run_until(lambda: g.leaders() == [survivor], limit=10.0)
    log = g.logs[survivor]
    assert log.configuration.voters() == [survivor] and log.configuration.epoch == 1
    assert set(log.configuration.fenced) == set(lost)
    group = log.state.groups.get("b")
    have = set(group.brokers) if group is not None else set()
    assert kept <= have, "the survivor lost %s it held (seed %d)" % (sorted(kept - have), g.seed)
    after = Writer(g, name="after")
    for _ in range(5):
        after.write()
        g.run(0.02)
    assert len(after.acknowledged()) == 5
    # the old members come back as they were: refused, and fenced for good
    for member in lost:
        g.restart(member)
    g.run(1.0)
    for member in lost:
        assert g.logs[member].fenced_reason is not None, "%s was not fenced (seed %d)" % (member, g.seed)
        assert not g.logs[member].mesh.links
    assert g.leaders() == [survivor]
    # grown back: a fresh store joins as a learner, caught up, promoted; the same id may come back fresh
    for member in lost:
        g.crash(member)
        g.disks[member] = MemoryDisk(g.clock, latency=0.004)
        _add(g, member)
    assert g.logs[survivor].configuration.voters() == sorted(g.ids)
    held_by_members(g, have)
    held_by_members(g, after.acknowledged(), name="after")
    assert not g.violations, g.violations


def _ids_in(disk):
    """The broker ids of group "b" in a member's durable journal and snapshot (what it had acknowledged)."""
    ids = set()
    data = disk.read_file("raft.snapshot")
    state = snapshot.decode(data)[0] if data is not None else {}
    for group in (state.get("groups") or [] if data is not None else []):
        if group.get("brokerName") == "b":
            ids.update(int(entry[0]) for entry in group.get("brokers") or [])
    records, _ = decode_records(disk.durable)
    for record in records:
        if record[0] == "E" and record[3][:3] == b"\x00\x92\x00":
            for event in unpack(record[3][1:])[1][0]:
                if event.get("brokerName") == "b":
                    ids.add(event["brokerId"])
    return ids


def test_a_member_fenced_while_it_runs_says_so_and_names_no_leader(sim):
    g = sim(seed=16)
    g.leader()
    survivor = "n0"
    for member in g.ids:
        g.crash(member)
    g.restart(survivor, force=True)
    g.run_until(lambda: g.leaders() == [survivor])
    g.restart("n1")
    g.run(1.0)
    status = g.logs["n1"].status()
    assert status["role"] == "fenced" and "forced anew" in status["fencedReason"]
    assert g.logs["n1"].leader_id is None and not g.logs["n1"].is_leader
    from namesrv.controller.metrics import raft_families
    fenced = {f.name: f for f in raft_families(status)}["rocketmq_namesrv_controller_raft_fenced"]
    assert fenced.samples[0].value == 1
    g.crash("n1")
    g.restart("n1")                                    # and at every start after, from its marker
    assert g.logs["n1"].status()["role"] == "fenced" and g.logs["n1"]._syncobj is None
