"""The faults of a run, as Jepsen's DLedger suite and OpenChaos define them, drawn from one seed.

A schedule is a name and a function that, given the seed's ``random.Random`` and the run's state
(which controller leads, which broker is master), picks what to break; the run breaks it for a
while, heals everything, waits, and goes again. The same seed picks the same faults.

Jepsen (DLedger): ``partition-random-halves``, ``partition-random-node``,
``partition-majorities-ring`` (five members), ``kill``, ``pause``.
OpenChaos: ``leader-kill``, ``minor-kill``, ``major-kill``, ``suspend-leader``, ``packet-loss`` (through
the lab's user-space proxy, tools/faultlab/proxy.py: this kernel's ``tc`` has no netem).
Ours, from the issue's measurements and RocketMQ's tracker: ``all-killed`` (every controller at once,
then all restarted), ``master-cut`` (the broker master cut off from the controllers),
``master-and-controller-cut`` (the master and one controller on one side, the rest on the other),
``master-kill`` and ``master-and-leader-kill`` (#7689: the master and the controller leader together).
``mixed`` draws one of the others each time.
RocketMQ's controller bug reports (``JAVA_BUGS``): ``leader-cut-from-master`` (#10812),
``leader-cut-from-slave-master-kill`` (#10812, #9845), ``master-hang`` (#10416), ``slave-kill`` (#8380,
#10875), ``isr-flap`` (#7219, #6342).

The controller group's own operations (issue 56), done by the lab as an operator would with
``namesrv-admin`` (``groupops.py``) while clients and brokers run: ``member-added-during-partition``,
``leader-removed`` (leadership handed over first), ``leader-transfer``, ``snapshot-catch-up`` (a member
kept down while the log is compacted past it) and ``quorum-lost-forced`` (two of three lost, the
survivor forced into a new group, the old ones fenced when they come back, then added back fresh).
Each restores a group of three before the next cycle.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

from tools.faultlab import groupops


@dataclass
class Fault:
    action: str                       # partition | cuts | kill | pause | loss | steps
    sides: list = field(default_factory=list)     # partition: lists of host names
    targets: list = field(default_factory=list)   # kill / pause: member host names
    description: str = ""
    settings: dict = field(default_factory=dict)  # loss: the proxy's settings
    #: steps: one fault made of several, in order: ("cut", side_a, side_b), ("heal",), ("kill", host),
    #: ("wait", seconds); the fault's own duration starts after the last one
    steps: list = field(default_factory=list)
    run: Optional[Callable] = None    # ops: the operator's part, done at the fault (state)
    heal: Optional[Callable] = None   # ops: what brings the group back to three, done after the heal (state)


def _halves(rng, names):
    shuffled = list(names)
    rng.shuffle(shuffled)
    cut = len(shuffled) // 2
    return [shuffled[:cut], shuffled[cut:]]


def partition_random_halves(rng, run):
    sides = _halves(rng, run.member_hosts)
    return Fault("partition", sides=sides, description="halves %s | %s" % tuple(sides))


def partition_random_node(rng, run):
    node = rng.choice(run.member_hosts)
    return Fault("partition", sides=[[node], [h for h in run.all_hosts if h != node]],
                 description="%s alone" % node)


def partition_majorities_ring(rng, run):
    """Each member sees a majority, but no two see the same one (five members: each sees its two ring neighbours)."""
    hosts = list(run.member_hosts)
    rng.shuffle(hosts)
    n = len(hosts)
    cuts = []
    for i, host in enumerate(hosts):
        near = {hosts[(i - 1) % n], host, hosts[(i + 1) % n]}
        for other in hosts[i + 1:]:
            if other not in near:
                cuts.append([[host], [other]])
    return Fault("cuts", sides=cuts, description="majorities ring %s" % hosts)


def kill(rng, run):
    node = rng.choice(run.member_hosts)
    return Fault("kill", targets=[node], description="kill -9 %s" % node)


def pause(rng, run):
    node = rng.choice(run.member_hosts)
    return Fault("pause", targets=[node], description="SIGSTOP %s" % node)


def leader_kill(rng, run):
    leader = run.leader_host() or rng.choice(run.member_hosts)
    return Fault("kill", targets=[leader], description="kill -9 the leader %s" % leader)


def minor_kill(rng, run):
    count = (len(run.member_hosts) - 1) // 2
    targets = rng.sample(run.member_hosts, count)
    return Fault("kill", targets=targets, description="kill -9 a minority %s" % targets)


def major_kill(rng, run):
    count = len(run.member_hosts) // 2 + 1
    targets = rng.sample(run.member_hosts, count)
    return Fault("kill", targets=targets, description="kill -9 a majority %s" % targets)


def suspend_leader(rng, run):
    leader = run.leader_host() or rng.choice(run.member_hosts)
    return Fault("pause", targets=[leader], description="SIGSTOP the leader %s" % leader)


def all_killed(rng, run):
    return Fault("kill", targets=list(run.member_hosts), description="kill -9 every controller")


def master_cut(rng, run):
    master = run.master_host() or rng.choice(run.broker_hosts)
    return Fault("partition", sides=[[master], list(run.member_hosts)],
                 description="broker master %s cut off from the controllers" % master)



def master_and_controller_cut(rng, run):
    master = run.master_host() or rng.choice(run.broker_hosts)
    others = [b for b in run.broker_hosts if b != master]
    ally = rng.choice(run.member_hosts)
    rest = [m for m in run.member_hosts if m != ally]
    return Fault("partition", sides=[[master, ally], others + rest + [run.client_host]],
                 description="%s and %s cut off from the rest" % (master, ally))


def packet_loss(rng, run):
    """OpenChaos's packet loss, by the lab's proxy: every link between controllers slow and lossy."""
    settings = {"delay": rng.choice([0.0, 0.02, 0.05]), "loss": rng.choice([0.1, 0.3]), "stall": 0.4,
                "reset": 0.002}
    return Fault("loss", targets=list(run.member_hosts), settings=settings,
                 description="lossy links between controllers %s" % settings)


def master_kill(rng, run):
    master = run.master_host() or rng.choice(run.broker_hosts)
    return Fault("kill", targets=[master], description="kill -9 the broker master %s" % master)


def master_and_leader_kill(rng, run):
    """RocketMQ #7689 (found with OpenChaos): the controller leader and the broker master die together."""
    master = run.master_host() or rng.choice(run.broker_hosts)
    leader = run.leader_host() or rng.choice(run.member_hosts)
    return Fault("kill", targets=[master, leader], description="kill -9 the master %s and the leader %s"
                 % (master, leader))


# -- RocketMQ's controller bug reports (issue 56, item 5; bench/results/controller-java-bugs.md) -------------------
def leader_cut_from_master(rng, run):
    """apache/rocketmq#10812: the broker master's beats reach only the follower controllers (its link to the
    leader cut; a 5.3.3 broker then drops the leader from the addresses it beats to). Java's leader takes the
    master for dead at its heartbeat timeout and elects the slave while the master serves; ours asks the
    followers (relay.py) and keeps it."""
    master = run.master_host() or rng.choice(run.broker_hosts)
    leader = run.leader_host() or rng.choice(run.member_hosts)
    return Fault("partition", sides=[[master], [leader]],
                 description="broker master %s cut off from the controller leader %s only" % (master, leader))


def leader_cut_from_slave_master_kill(rng, run):
    """#10812 and #9845 from the slave's side: the slave's beats reach only the followers, then the master dies.
    Java's leader does not hear the slave: nobody can be elected until the cut heals. Ours hears it through the
    followers and elects it; it learns so once it reaches the leader again."""
    master = run.master_host() or rng.choice(run.broker_hosts)
    slave = next(b for b in run.broker_hosts if b != master)
    leader = run.leader_host() or rng.choice(run.member_hosts)
    return Fault("steps", steps=[("cut", [slave], [leader]), ("wait", rng.uniform(3.0, 6.0)), ("kill", master)],
                 description="slave %s cut off from the leader %s, then kill -9 the master %s" % (slave, leader, master))


def master_hang(rng, run):
    """#10416 (and #9717): a master alive to the kernel, its connections open, that stops beating (an OOM, a long
    pause): SIGSTOP. Java 5.3.3's JRaft controller never scans again a second after the first beat, so it is
    never replaced; its DLedger controller (what the lab runs) and ours replace it at its timeout."""
    master = run.master_host() or rng.choice(run.broker_hosts)
    return Fault("pause", targets=[master], description="SIGSTOP the broker master %s" % master)


def slave_kill(rng, run):
    """#8380 and #10875: with the re-election predicate inverted (Java's JRaft controller), a dead slave beside a
    live master triggers elections; a dead master beside a live slave does not. No election may follow this."""
    master = run.master_host() or rng.choice(run.broker_hosts)
    slave = next(b for b in run.broker_hosts if b != master)
    return Fault("kill", targets=[slave], description="kill -9 the broker slave %s" % slave)


def isr_flap(rng, run):
    """#7219 and #6342: the in-sync set shrinking and growing again and again (the master-slave link cut and healed
    every second or so), then the master killed: whoever is elected must hold every acknowledged message."""
    master = run.master_host() or rng.choice(run.broker_hosts)
    slave = next(b for b in run.broker_hosts if b != master)
    steps = []
    for _ in range(rng.randint(3, 6)):
        steps += [("cut", [master], [slave]), ("wait", rng.uniform(0.5, 2.5)), ("heal",),
                  ("wait", rng.uniform(0.5, 2.5))]
    steps.append(("kill", master))
    return Fault("steps", steps=steps, description="the link between %s and %s flapping %d times, then kill -9 %s"
                 % (master, slave, len(steps) // 4, master))


SCHEDULES = {
    "partition-random-halves": partition_random_halves,
    "partition-random-node": partition_random_node,
    "partition-majorities-ring": partition_majorities_ring,
    "kill": kill,
    "pause": pause,
    "leader-kill": leader_kill,
    "minor-kill": minor_kill,
    "major-kill": major_kill,
    "suspend-leader": suspend_leader,
    "all-killed": all_killed,
    "master-cut": master_cut,
    "master-and-controller-cut": master_and_controller_cut,
    "master-kill": master_kill,
    "packet-loss": packet_loss,
    "master-and-leader-kill": master_and_leader_kill,
    "leader-cut-from-master": leader_cut_from_master,
    "leader-cut-from-slave-master-kill": leader_cut_from_slave_master_kill,
    "master-hang": master_hang,
    "slave-kill": slave_kill,
    "isr-flap": isr_flap,
}
#: the schedules of RocketMQ's controller bug reports (``--schedule java-bugs``)
JAVA_BUGS = ("leader-cut-from-master", "leader-cut-from-slave-master-kill", "master-hang", "slave-kill", "isr-flap")


def mixed(rng, run):
    name = rng.choice(_MIXED)   # the schedules before the controller bug reports and the group's operations
    fault = SCHEDULES[name](rng, run)
    fault.description = "%s: %s" % (name, fault.description)
    return fault


SCHEDULES["mixed"] = mixed
_MIXED = sorted(n for n in SCHEDULES if n not in JAVA_BUGS)   # as before they came: seeds replay


# -- the controller group's own operations (groupops.py) ----------------------------------------------------
def member_added_during_partition(rng, run):
    isolated = rng.choice(sorted(run.in_group))
    new = groupops.spare(run)

    def act(state):
        state.lab.partition([isolated], [h for h in state.all_hosts if h != isolated])
        groupops.add_member(state, new)

    def undo(state):
        groupops.remove_member(state, new)
    return Fault("ops", run=act, heal=undo,
                 description="%s cut off; %s added and promoted meanwhile" % (isolated, new.member_id))


def leader_removed(rng, run):
    box = {}

    def act(state):
        box["leader"] = groupops.leader_member(state)
        groupops.remove_member(state, box["leader"])

    def undo(state):
        groupops.add_member(state, box["leader"])
    return Fault("ops", run=act, heal=undo, description="the leader handed over and removed, then added back fresh")


def leader_transfer(rng, run):
    target = rng.choice(["any"] + ["n%d" % i for i in range(len(run.members))])

    def act(state):
        members = groupops.members(state)
        voters = [row["id"] for row in members.get("members") or [] if row["role"] == "voter" and not row["leader"]]
        groupops.transfer(state, target if target in voters or target == "any" else "any")
    return Fault("ops", run=act, description="leadership handed over to %s under load" % target)


def snapshot_catch_up(rng, run):
    box = {}

    def act(state):
        leader = groupops.leader_member(state)
        follower = rng.choice([m for m in state.members if m.host in state.in_group and m is not leader])
        box["follower"] = follower
        box["installed"] = groupops.installed_snapshots(follower)
        follower.kill()
        state.parked.add(follower.host)
        written = (groupops.members(state).get("store") or {}).get("snapshotsWritten", 0)
        box["round"] = box.get("round", 0) + 1
        if not groupops.churn(state, 150, "snap-%d-%d" % (id(box), box["round"])):
            raise groupops.StepFailed("the log did not grow by 150 entries while %s was down" % follower.member_id)
        groupops.wait_for(lambda: (groupops.members(state).get("store") or {}).get("snapshotsWritten", 0)
                          >= written + 2, 60, "the leader compacted its log twice", every=1.0)

    def undo(state):
        follower = box["follower"]
        state.parked.discard(follower.host)
        follower.start()
        groupops.wait_for(lambda: groupops.installed_snapshots(follower) > box["installed"], 60,
                          "%s caught up from a snapshot" % follower.member_id, every=0.5)
        groupops.note(state, "caught_up_from_snapshot", member=follower.member_id)
    return Fault("ops", run=act, heal=undo, description="a follower kept down while the log is compacted past it")


def quorum_lost_forced(rng, run):
    box = {}

    def act(state):
        group = [m for m in state.members if m.host in state.in_group]
        survivor = rng.choice(group)
        box["lost"] = [m for m in group if m is not survivor]
        groupops.force_new_group(state, survivor, box["lost"])

    def undo(state):
        groupops.old_members_come_back(state, box["lost"])
        for member in box["lost"]:
            groupops.add_member(state, member)
    return Fault("ops", run=act, heal=undo,
                 description="two of three lost for good, the survivor forced; the old ones fenced, then added fresh")


MEMBERSHIP = {
    "member-added-during-partition": member_added_during_partition,
    "leader-removed": leader_removed,
    "leader-transfer": leader_transfer,
    "snapshot-catch-up": snapshot_catch_up,
    "quorum-lost-forced": quorum_lost_forced,
}
SCHEDULES.update(MEMBERSHIP)
