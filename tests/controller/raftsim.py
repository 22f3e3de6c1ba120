"""A simulated controller group: real RaftLogs (pysyncobj, our transport, journal, pre-vote and lease)
on one ``task.Clock``, a simulated network and simulated disks.

Everything that is chance comes from one seed: election timeouts (pysyncobj's ``random`` and our
pre-vote's), message delays, drops and which writes a power cut tears. A failing run prints its
seed; ``SimGroup(seed=...)`` replays it exactly, since nothing reads the wall clock.

- ``SimNet`` carries msgpack bytes between members (so every message goes through the codec),
  in order per direction, with delays; ``partition`` cuts groups apart, ``heal`` joins them.
- ``MemoryDisk`` (the product's) keeps what was synced; a power cut loses the rest.
- Each member's reactor is a ``PausableReactor`` over the one clock: ``pause`` freezes it as
  SIGSTOP freezes a process (its timers and deliveries wait, time goes on).
"""

import contextlib
import itertools
import os
import random

import pysyncobj.syncobj
from twisted.internet import task

from namesrv.controller.replication import NotLeader
from namesrv.controller.replication.codec import pack, unpack
from namesrv.controller.replication.disk import MemoryDisk
from namesrv.controller.replication.membership import Configuration
from namesrv.controller.replication.raft import RaftLog, RaftTiming
from namesrv.controller.state import ReplicaState


class PausableReactor:
    """callLater on a shared clock, held back while the member is paused."""

    def __init__(self, clock):
        self.clock = clock
        self.paused = False
        self._held = []

    def seconds(self):
        return self.clock.seconds()

    def callLater(self, delay, f, *args, **kwargs):
        return self.clock.callLater(delay, self._run, f, args, kwargs)

    def _run(self, f, args, kwargs):
        if self.paused:
            self._held.append((f, args, kwargs))
        else:
            f(*args, **kwargs)

    def pause(self):
        self.paused = True

    def resume(self):
        self.paused = False
        held, self._held = self._held, []
        for f, args, kwargs in held:
            f(*args, **kwargs)

    def getDelayedCalls(self):
        return self.clock.getDelayedCalls()


class SimMesh:
    """One member's view of the simulated network, with ``MemberMesh``'s interface. Two members link only
    when each one's configuration holds the other and their group generations agree, as the member
    link's handshake decides (``credentials``: the RaftLog's, set when the member starts)."""

    def __init__(self, net, member_id):
        self.net = net
        self.member_id = member_id
        self.receiver = None
        self.links = {}
        self.refusals = type("Refusals", (), {"count": 0})()
        self.credentials = None
        self._last_in = {}

    def start(self, receiver):
        self.receiver = receiver
        self.net.join(self)

    def stop(self):
        self.net.leave(self)
        self.receiver = None

    def set_peers(self, addresses):
        if self.receiver is not None:
            self.net.relink(self.member_id)

    def set_fenced(self, addresses):
        self.fenced = dict(addresses)
        if self.receiver is not None:
            self.net.relink(self.member_id)

    def send(self, peer, value, force=False):
        return self.net.send(self.member_id, peer, value)

    def connected(self, peer):
        return peer in self.links

    def accept(self):
        return None

    def drop(self, peer):
        self.net.drops += 1
        if peer in self.links and peer in self.net.meshes:
            self.net._disconnect(self, self.net.meshes[peer])
            self.net.clock.callLater(0.05, self.net.reconnect, self.member_id, peer)


class SimNet:
    def __init__(self, clock, rng, delay=(0.0005, 0.003), loss=0.0):
        self.clock = clock
        self.rng = rng
        self.delay = delay
        self.loss = loss
        self.meshes = {}
        self.reactors = {}
        self.cut = set()          # frozenset({a, b}) pairs that cannot talk
        self._last = {}           # (a, b) -> time of the last delivery scheduled (order per direction)
        self._epoch = {}          # frozenset({a, b}) -> link epoch; a message of an older epoch is lost
        self.sent = 0
        self.drops = 0
        self.fencings = []        # (fenced member, the member that told it)

    def _reachable(self, a, b):
        return a in self.meshes and b in self.meshes and frozenset((a, b)) not in self.cut

    def _up(self, a, b):
        return self._reachable(a, b) and self._allowed(a, b)

    def _allowed(self, a, b):
        """The handshake's decision: both know each other, and their generations agree (the older one of two
        generations that meet is fenced, as ``members.MemberLink._peer_state`` does)."""
        ca, cb = self.meshes[a].credentials, self.meshes[b].credentials
        if ca is None or cb is None:
            return True
        sa, sb = ca.state(), cb.state()
        tells = (ca.is_fenced(b) and cb.knows(a)) or (cb.is_fenced(a) and ca.knows(b))
        if (ca.knows(b) and cb.knows(a)) or tells:
            if not sa.same_group(sb):
                older, newer, state = (a, b, sb) if sa.epoch < sb.epoch else (b, a, sa)
                if self.meshes[older].credentials.state().epoch < state.epoch:
                    self.fencings.append((older, newer))
                    self.meshes[older].credentials.fenced(newer, state)
                return False
            return not tells
        return False

    def relink(self, member):
        """A member's configuration changed: links it no longer allows go, links it now allows come."""
        if member not in self.meshes:
            return
        for other in list(self.meshes):
            if other == member or member not in self.meshes:
                continue
            mesh, peer = self.meshes[member], self.meshes[other]
            if other in mesh.links and not self._up(member, other):
                self._disconnect(mesh, peer)
            elif other not in mesh.links and self._up(member, other):
                self._connect(member, other)

    def join(self, mesh):
        self.meshes[mesh.member_id] = mesh
        for other in list(self.meshes):
            if other != mesh.member_id and mesh.member_id in self.meshes and self._up(mesh.member_id, other):
                self._connect(mesh.member_id, other)

    def leave(self, mesh):
        if self.meshes.get(mesh.member_id) is not mesh:
            return
        del self.meshes[mesh.member_id]
        for other in list(self.meshes):
            self._disconnect(mesh, self.meshes[other])

    def _connect(self, a, b):
        pair = frozenset((a, b))
        self._epoch[pair] = self._epoch.get(pair, 0) + 1
        for x, y in ((a, b), (b, a)):
            mesh = self.meshes[x]
            mesh.links[y] = self._epoch[pair]
            mesh.receiver.peer_connected(y)

    def _disconnect(self, mesh_a, mesh_b):
        pair = frozenset((mesh_a.member_id, mesh_b.member_id))
        self._epoch[pair] = self._epoch.get(pair, 0) + 1
        for mesh, other in ((mesh_a, mesh_b.member_id), (mesh_b, mesh_a.member_id)):
            if mesh.links.pop(other, None) is not None and mesh.receiver is not None:
                mesh.receiver.peer_disconnected(other)

    def partition(self, *groups):
        """Members in different groups cannot talk (members not named keep every link)."""
        for i, group in enumerate(groups):
            for other in groups[i + 1:]:
                for a in group:
                    for b in other:
                        self.cut.add(frozenset((a, b)))
                        if a in self.meshes and b in self.meshes:
                            self._disconnect(self.meshes[a], self.meshes[b])

    def isolate(self, member, others):
        self.partition([member], [o for o in others if o != member])

    def heal(self):
        cut, self.cut = self.cut, set()
        for pair in sorted(cut, key=sorted):
            a, b = sorted(pair)
            if self._up(a, b) and b not in self.meshes[a].links:
                self._connect(a, b)

    def reconnect(self, a, b):
        if self._up(a, b) and b not in self.meshes[a].links:
            self._connect(a, b)

    def send(self, a, b, value):
        if not self._reachable(a, b) or b not in self.meshes[a].links:
            return False
        if self.loss and self.rng.random() < self.loss:
            return True
        data = pack(value)             # what travels is bytes: every message goes through the codec
        self.sent += 1
        pair = frozenset((a, b))
        epoch = self._epoch[pair]
        at = max(self._last.get((a, b), 0.0), self.clock.seconds() + self.rng.uniform(*self.delay))
        self._last[(a, b)] = at
        self.clock.callLater(at - self.clock.seconds(), self._deliver, a, b, epoch, data)
        return True

    def _deliver(self, a, b, epoch, data):
        mesh = self.meshes.get(b)
        if mesh is None or self._epoch.get(frozenset((a, b))) != epoch or mesh.receiver is None:
            return
        reactor = self.reactors.get(b)
        if reactor is not None and reactor.paused:
            reactor._held.append((self._deliver, (a, b, epoch, data), {}))
            return
        mesh._last_in[a] = self.clock.seconds()
        mesh.receiver.value_received(a, unpack(data))


@contextlib.contextmanager
def pysyncobj_on(clock, rng):
    """pysyncobj reads its own monotonic clock and the random module: point both at the simulation.

    What it puts back is what it found, so these nest like ``mock.patch``: left in any other order than
    last in, first out, the last to leave puts back an earlier group's clock (frozen once its test ends),
    and every later Raft in the process never times an election. That is refused here, loudly."""
    saved = pysyncobj.syncobj.monotonicTime, pysyncobj.syncobj.random
    pysyncobj.syncobj.monotonicTime = clock.seconds
    pysyncobj.syncobj.random = rng
    try:
        yield
    finally:
        if (pysyncobj.syncobj.monotonicTime, pysyncobj.syncobj.random) != (clock.seconds, rng):
            raise AssertionError("a simulated group closed while one made after it still holds pysyncobj's "
                                 "clock: close them last made, first closed (sim_groups does)")
        pysyncobj.syncobj.monotonicTime, pysyncobj.syncobj.random = saved


@contextlib.contextmanager
def sim_groups(tmp_path):
    """``make(**kwargs)``: a SimGroup on a fresh store under ``tmp_path``. Every group made is closed on
    leaving, the last made first (their pysyncobj patches nest), even when a test or a close fails."""
    with contextlib.ExitStack() as groups:
        made = itertools.count()

        def make(**kwargs):
            store = tmp_path / ("g%d" % next(made))
            store.mkdir()
            group = SimGroup(store, **kwargs)
            groups.callback(group.close)
            return group
        yield make


class SimGroup:
    """``size`` controllers n0..n{size-1} on one clock, and ``spare`` more ids (with disks) to add later.

    Besides Raft's own checks, every step checks the membership invariants (KAFKA-16580's): a leader's log
    holds at most one uncommitted configuration entry; committed configurations are the same sequence on
    every member, and two that follow each other differ by one voter at most; and no term has two leaders
    whatever configuration each was elected in."""

    def __init__(self, tmp_path, size=3, seed=0, delay=(0.0005, 0.003), loss=0.0, timing=None, disk_latency=0.002,
                 spare=0):
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = task.Clock()
        self.net = SimNet(self.clock, self.rng, delay, loss)
        self.tmp_path = tmp_path
        self.timing = timing or RaftTiming()
        self.ids = ["n%d" % i for i in range(size)]
        self.spares = ["n%d" % i for i in range(size, size + spare)]
        self.addresses = {i: "10.0.0.%d:9878" % (n + 1) for n, i in enumerate(self.ids + self.spares)}
        self.peers = {i: self.addresses[i] for i in self.ids}
        self.disks = {i: MemoryDisk(self.clock, latency=disk_latency) for i in self.ids + self.spares}
        self.logs = {}
        self.reactors = {}
        self.history = []          # ("leader", time, id, term) whenever a member serves as leader
        self.leaders_by_term = {}  # term -> members pysyncobj made leader in it (Raft: at most one)
        self.committed = {}        # log index -> the configuration a member applied (committed) there
        self.violations = []
        self._checked = 0
        self._patch = pysyncobj_on(self.clock, self.rng)
        self._patch.__enter__()
        try:
            for member in self.ids:
                self.start(member)
        except BaseException:
            self.close()
            raise

    def close(self):
        """Stop every member and give pysyncobj back its own clock and random (whatever a crash raises)."""
        try:
            for member in list(self.logs):
                self.crash(member)
        finally:
            self._patch.__exit__(None, None, None)

    # -- members ------------------------------------------------------------------------------------
    def start(self, member, peers=None, force=False, join=False):
        """Start ``member`` on its disk (``peers``: its controllerDLegerPeers, the group's by default, with
        itself added when it joins; ``force``: --force-new-controller-group; ``join``: controllerJoin)."""
        reactor = PausableReactor(self.clock)
        self.reactors[member] = self.net.reactors[member] = reactor
        self.disks[member].clock = reactor
        store = os.path.join(str(self.tmp_path), member)
        mesh = SimMesh(self.net, member)
        if peers is None:
            peers = dict(self.peers, **{member: self.addresses[member]})
        log = RaftLog(ReplicaState(), store, member, peers, "g", reactor, timing=self.timing, mesh=mesh,
                      disk=self.disks[member], monotonic=self.clock.seconds, rng=self.rng, force_new_group=force,
                      join=join)
        mesh.credentials = log.credentials
        log.role_listeners.append(lambda serving, m=member, l=log: self._role(m, l, serving))
        applied = log._members_applied
        log._members_applied = lambda wire, m=member, l=log: (self._applied(m, l, wire), applied(wire))[1]
        log.start()
        self.logs[member] = log
        return log

    def _applied(self, member, log, wire):
        """A configuration committed and applied on ``member``: every member applies the same one at an index."""
        index, configuration = log._syncobj.raftLastApplied + 1, Configuration.from_wire(wire)
        known = self.committed.setdefault(index, configuration)
        if known != configuration:
            self.violations.append("%s applied %s at %d, another member %s (seed %d)"
                                   % (member, configuration, index, known, self.seed))

    def _role(self, member, log, serving):
        if serving:
            self.history.append(("leader", self.clock.seconds(), member, log._syncobj.raftCurrentTerm))

    def _halt(self, member):
        log = self.logs.pop(member)
        if log._ticker is not None and log._ticker.running:       # None: it never started (fenced)
            log._ticker.stop()
        log.mesh.stop()
        log._syncobj = None
        reactor = self.reactors[member]
        reactor.paused, reactor._held = True, []     # whatever it had scheduled dies with it

    def crash(self, member):
        """kill -9: what the process had not handed to the disk is gone; a write under way may have made it."""
        self._halt(member)
        self.disks[member].crash(self.rng)

    def power_cut(self, member):
        """The machine loses power: what was not synced is gone, a torn write may remain."""
        self._halt(member)
        self.disks[member].power_cut(self.rng)

    def restart(self, member, **kwargs):
        return self.start(member, **kwargs)

    def pause(self, member):
        self.reactors[member].pause()

    def resume(self, member):
        self.reactors[member].resume()

    # -- time, with Raft's safety checked at every step ----------------------------------------------------
    def step(self, step=0.005):
        self.clock.advance(step)
        serving = []
        for member, log in self.logs.items():
            obj = log._syncobj
            if obj is not None and obj._isLeader():
                self.leaders_by_term.setdefault(obj.raftCurrentTerm, set()).add(member)
            if log.is_leader and not self.reactors[member].paused:
                serving.append(member)
        if len(serving) > 1:
            self.violations.append("two members serve as leader at %.3f: %s (seed %d)"
                                   % (self.clock.seconds(), serving, self.seed))
        for term, members in self.leaders_by_term.items():
            if len(members) > 1:
                self.violations.append("term %d has leaders %s (seed %d)" % (term, sorted(members), self.seed))
                self.leaders_by_term[term] = {min(members)}
        self._check_membership()

    def _check_membership(self):
        for member, log in self.logs.items():
            obj = log._syncobj
            # a leader that serves has committed an entry of its term: its commit index covers every entry
            # committed before, so what it sees as uncommitted is
            if obj is not None and log.is_leader:
                pending = log._journal.uncommitted_configurations(obj.raftCommitIndex)
                if len(pending) > 1:
                    self.violations.append("leader %s has %d uncommitted configuration entries %s at %.3f (seed %d)"
                                           % (member, len(pending), pending, self.clock.seconds(), self.seed))
        if len(self.committed) != self._checked:
            self._checked = len(self.committed)
            sequence = [self.committed[index] for index in sorted(self.committed)]
            for before, after in zip([Configuration.static(self.peers)] + sequence, sequence):
                if len(before.voter_change(after)) > 1 and after.epoch == before.epoch:
                    self.violations.append("committed configurations %s then %s differ by %d voters (seed %d)"
                                           % (before, after, len(before.voter_change(after)), self.seed))

    def run(self, seconds, step=0.005):
        end = self.clock.seconds() + seconds
        while self.clock.seconds() < end:
            self.step(step)

    def run_until(self, condition, limit=30.0, step=0.005):
        end = self.clock.seconds() + limit
        while not condition():
            if self.clock.seconds() >= end:
                raise AssertionError("not within %.1f simulated s (seed %d)" % (limit, self.seed))
            self.step(step)

    def leaders(self):
        return [m for m, log in self.logs.items() if log.is_leader and not self.reactors[m].paused]

    def leader(self, limit=30.0):
        self.run_until(lambda: len(self.leaders()) == 1, limit)
        return self.leaders()[0]

    def propose(self, member, events):
        """Propose on ``member``; returns a box filled with ("ok", result) or ("failed", why) when settled."""
        box = []
        d = self.logs[member].propose(events)
        d.addCallbacks(lambda result: box.append(("ok", result, self.clock.seconds())),
                       lambda failure: box.append(("failed", failure.value, self.clock.seconds())))
        return box


def apply_id(name, broker_id):
    return {"type": "apply_broker_id", "clusterName": "c", "brokerName": name, "brokerId": broker_id,
            "brokerAddress": "10.1.0.%d:10911" % broker_id, "registerCheckCode": "10.1.0.%d:10911;1" % broker_id}


__all__ = ["SimGroup", "SimNet", "PausableReactor", "apply_id", "sim_groups", "NotLeader"]
