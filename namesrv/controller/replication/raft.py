"""Several controllers: events replicated by Raft (pysyncobj's), on our transport, journal and guards.

Why pysyncobj: a maintained pure-Python Raft (elections, log replication, snapshots with log
compaction) that installs from PyPI with nothing to run beside us; etcd would be one more daemon
and two more ports per controller for a state of a few kilobytes, and DLedger's users expect one
address per controller. What pysyncobj does unsafely is replaced (``hooks.py``): its pickled
transport by the authenticated member mesh (``members.py``, ``mesh.py``, ``transport.py``), its
pickled commands and snapshots by msgpack (``codec.py``, ``snapshot.py``), its unsynced mmap
journal by records fsynced before any message depends on them (``journal.py``, ``disk.py``), and
its elections get a pre-vote, its leader a read lease (``quorum.py``).

How it sits in a Twisted process: pysyncobj's ticking thread is off (``autoTick=False``). The
reactor ticks it every ``TICK`` seconds (for its timers) and right after each message or
proposal, so every Raft step, every applied event and every snapshot happens on the reactor
thread; only the journal's writes and fsyncs run in a thread.

A new leader first commits an empty entry of its own term (as Java's controller appends an
initial entry) and only then serves: by then it has applied everything an earlier leader
committed. It answers only while its lease holds (``is_leader``); reads and decisions on a
controller that may have been deposed get CONTROLLER_NOT_LEADER.
"""

import os
import random
import time

from pysyncobj import FAIL_REASON, SyncObjConf, SyncObjConsumer, replicated
from twisted.internet import defer, task
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.controller.replication import NotLeader, split_address
from namesrv.controller.replication import hooks, snapshot
from namesrv.controller.replication.codec import CodecError, check_event
from namesrv.controller.replication.disk import FileDisk
from namesrv.controller.replication.journal import DurableJournal, JournalError
from namesrv.controller.replication.members import Credentials
from namesrv.controller.replication.mesh import MemberMesh
from namesrv.controller.replication.quorum import LeaderLease, PreVote
from namesrv.controller.replication.transport import NOTE, PREVOTE, MemberNode, MemberTransport
from namesrv.interfaces import IReplicatedLog

#: seconds between two ticks of pysyncobj's timers (messages and proposals tick at once)
TICK = 0.02
JOURNAL_FILE = "raft.journal"
SNAPSHOT_FILE = "raft.snapshot"


class RaftTiming:
    """Raft's timers: election timeout range, heartbeat period, and how long a leader without a majority stays."""

    def __init__(self, min_timeout=0.4, max_timeout=1.4, heartbeat=0.1, leader_fallback=2.0,
                 compaction_entries=2000, compaction_seconds=60):
        self.min_timeout = min_timeout
        self.max_timeout = max_timeout
        self.heartbeat = heartbeat
        self.leader_fallback = leader_fallback
        #: a snapshot replaces the log once it holds this many entries, or this long after the last one
        self.compaction_entries = compaction_entries
        self.compaction_seconds = compaction_seconds


class RaftStartError(ValueError):
    """This controller's Raft state on disk cannot be used: say which file and why, and do not start."""


class _EventConsumer(SyncObjConsumer):
    """The part of the state pysyncobj replicates: the controller's ReplicaState, changed by events."""

    log = Logger()

    def __init__(self, state):
        super().__init__()
        self._state = state

    @replicated
    def apply_events(self, events):
        """Applied on every controller in log order. A bad event is skipped on all of them alike."""
        for event in events:
            try:
                self._state.apply(event)
            except ValueError as e:
                self.log.error("controller: event skipped: {err}", err=e)
        return self._state.applied


@implementer(IReplicatedLog)
class RaftLog:
    log = Logger()
    applies_at_once = False

    def __init__(self, state, store_dir, self_id, peers, group, reactor, secret=None, timing=None, mesh=None,
                 disk=None, monotonic=time.monotonic, rng=None):
        self.state = state
        self.self_id = self_id
        self.group = group
        self.peers = dict(peers)              # id -> controller address (what brokers are told, and members dial)
        self.reactor = reactor
        self.role_listeners = []
        #: ``callback(peer, body)`` for each note another member sends (``send_note``)
        self.note_listeners = []
        self.store_dir = store_dir
        self.timing = timing or RaftTiming()
        self.monotonic = monotonic
        self.rng = rng or random.Random()
        self.credentials = Credentials(self_id, secret, self.peers)
        others = {peer: split_address(address) for peer, address in self.peers.items() if peer != self_id}
        self.mesh = mesh if mesh is not None else MemberMesh(self.credentials, others, reactor, monotonic)
        self._disk = disk
        self.journal_path = os.path.join(store_dir, JOURNAL_FILE)
        self.snapshot_path = os.path.join(store_dir, SNAPSHOT_FILE)
        self._syncobj = None
        self._transport = None
        self._journal = None
        self._ticker = None
        self._poked = None
        self._serving_term = None
        self._serving = False
        self._seen = (None, None)
        self.broken = None
        self.snapshots_loaded = 0

    # -- life -----------------------------------------------------------------------------------
    def start(self):
        os.makedirs(self.store_dir, exist_ok=True)
        self._check_snapshot()
        disk = self._disk if self._disk is not None else FileDisk(self.journal_path, self.reactor)
        try:
            journal = DurableJournal(disk, first_sync=(self.snapshot_path, self.store_dir))
        except JournalError as e:
            raise RaftStartError("controller Raft journal %s: %s" % (self.journal_path, e))
        journal.on_failure = self._broke
        others = [peer for peer in self.peers if peer != self.self_id]
        transport = MemberTransport(self.self_id, others, self.mesh, journal, self.monotonic,
                                    self.timing.min_timeout)
        transport.poke = self._poke
        transport.note_handler = self._note_received
        transport.call_soon = lambda f: self.reactor.callLater(0, f)
        conf = SyncObjConf(
            autoTick=False, useFork=False, dynamicMembershipChange=False, journalFile=self.journal_path,
            fullDumpFile=self.snapshot_path, serializer=self._write_snapshot, deserializer=self._read_snapshot,
            raftMinTimeout=self.timing.min_timeout, raftMaxTimeout=self.timing.max_timeout,
            appendEntriesPeriod=self.timing.heartbeat, leaderFallbackTimeout=self.timing.leader_fallback,
            appendEntriesUseBatch=False, appendEntriesBatchSizeBytes=1 << 20,
            logCompactionMinEntries=self.timing.compaction_entries, logCompactionMinTime=self.timing.compaction_seconds,
            commandsWaitLeader=False)
        self._consumer = _EventConsumer(self.state)
        hooks.prepare_journal(self.journal_path, journal)
        try:
            syncobj = hooks.SafeSyncObj(MemberNode(self.self_id), list(transport.nodes.values()), conf,
                                        consumers=[self._consumer], transport=transport)
        finally:
            hooks.forget_journal(self.journal_path)
        if sorted(syncobj._idToMethod) != [0]:
            raise hooks.HookError("pysyncobj numbered the replicated calls %s; apply_events must be 0"
                                  % sorted(syncobj._idToMethod))
        transport.syncobj = syncobj
        transport.lease = LeaderLease(self.monotonic, len(self.peers), self.timing.min_timeout)
        transport.prevote = PreVote(transport, others, self.monotonic, self.rng, self.timing.min_timeout,
                                    self.timing.max_timeout, self._send_prevote)
        syncobj.election_gate = transport.prevote.gate
        self._syncobj, self._transport, self._journal = syncobj, transport, journal
        self.mesh.start(transport)
        self._ticker = task.LoopingCall(self._tick)
        self._ticker.clock = self.reactor
        self._ticker.start(TICK, now=True).addErrback(
            lambda failure: self.log.failure("controller: Raft ticking stopped", failure))
        self.log.info("controller {id}: Raft member of {peers}, on its controller port ({auth})", id=self.self_id,
                      peers=", ".join(sorted(self.peers)),
                      auth="members authenticated by the group's secret" if self.credentials.secret
                      else "member authentication DISABLED")

    def stop(self):
        """Leave; a Deferred that fires once every record written is on disk."""
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        if self._poked is not None and self._poked.active():
            self._poked.cancel()
        self.mesh.stop()
        self._set_serving(False)
        if self._journal is None:
            return defer.succeed(None)
        journal, syncobj = self._journal, self._syncobj
        self._syncobj = None
        d = journal.when_synced()
        d.addErrback(lambda failure: None)
        d.addCallback(lambda _: syncobj.destroy())
        return d

    def _broke(self, error):
        self.broken = error
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        self.mesh.stop()
        self._set_serving(False)

    def _check_snapshot(self):
        if not os.path.exists(self.snapshot_path):
            return
        try:
            snapshot.decode(snapshot.read(self.snapshot_path))
        except (OSError, snapshot.SnapshotError) as e:
            raise RaftStartError("controller Raft snapshot %s cannot be read (%s): move this member's store "
                                 "aside to let it catch up from the others" % (self.snapshot_path, e))

    # -- ticking ----------------------------------------------------------------------------------------
    def _poke(self):
        if self._poked is None or not self._poked.active():
            self._poked = self.reactor.callLater(0, self._tick)

    def _tick(self):
        syncobj = self._syncobj
        if syncobj is None or self.broken is not None:
            return
        try:
            syncobj.doTick(0)
        except Exception:
            self.log.failure("controller: a Raft step failed")
        leader, term = syncobj._isLeader(), syncobj.raftCurrentTerm
        if (leader, term) != self._seen:
            self._seen = (leader, term)
            self._transport.lease.reset()
        if leader and self._serving_term is None:
            self._serving_term = ("pending", term)
            self._propose([], lambda result, error: self._first_entry(term, error))
        elif not leader and self._serving_term is not None:
            self._set_serving(False)
        elif leader and self._serving_term not in (("pending", term), term):
            self._set_serving(False)        # a new term while we stayed leader: serve once its first entry is in
        self._journal.sync()

    def _first_entry(self, term, error):
        if error == FAIL_REASON.SUCCESS and self._syncobj is not None and self._syncobj._isLeader() \
                and self._syncobj.raftCurrentTerm == term:
            self._journal.when_synced().addCallback(lambda _: self._serve(term))
        elif self._serving_term == ("pending", term):
            self._serving_term = None           # try again at the next tick if still leader

    def _serve(self, term):
        if self._syncobj is None or not self._syncobj._isLeader() or self._syncobj.raftCurrentTerm != term:
            self._serving_term = None
            return
        self._serving_term = term
        self.log.info("controller {id}: leader for term {term}, serving", id=self.self_id, term=term)
        self._set_serving(True)

    def _set_serving(self, serving):
        if not serving:
            self._serving_term = None
        if serving == self._serving:
            return
        self._serving = serving
        for listener in list(self.role_listeners):
            listener(serving)

    def send_note(self, peer, body):
        """A note (plain data, msgpack) to another member over its authenticated link; False when not linked."""
        syncobj = self._syncobj
        return self.mesh.send(peer, [NOTE, syncobj.raftCurrentTerm if syncobj is not None else 0, 0, 0, body])

    def _note_received(self, peer, body):
        for listener in list(self.note_listeners):
            listener(peer, body)

    def _send_prevote(self, peer, body):
        self.mesh.send(peer, [PREVOTE, self._syncobj.raftCurrentTerm, 0, 0, body])

    def _propose(self, events, callback):
        self._consumer.apply_events(events, callback=callback)
        self._poke()

    # -- snapshots (pysyncobj's serializer and deserializer) --------------------------------------------------
    def _write_snapshot(self, path, data):
        last, prev, members = data
        snapshot.write(path, snapshot.encode(self.state.to_dict(), last, prev, [str(m) for m in members]))

    def _read_snapshot(self, path):
        try:
            state, last, prev, members = snapshot.decode(snapshot.read(path))
            self.state.load_dict(state)
            self.snapshots_loaded += 1
        except Exception as e:
            self.log.critical("controller: Raft snapshot {path} not loaded: {err}", path=path, err=e)
            raise
        self.log.info("controller {id}: state restored from the Raft snapshot ({n} broker groups, entry {index})",
                      id=self.self_id, n=len(self.state.groups), index=last[1])
        return last, prev, members

    # -- IReplicatedLog ------------------------------------------------------------------------------------
    @property
    def is_leader(self):
        """Serving, and sure of it: pysyncobj leads, this term's first entry is in, and the lease holds."""
        syncobj = self._syncobj
        return (self._serving and syncobj is not None and syncobj._isLeader()
                and self._transport.lease.valid())

    @property
    def leader_id(self):
        if self.is_leader:
            return self.self_id
        syncobj = self._syncobj
        if syncobj is None:
            return None
        leader = syncobj._getLeader()
        if leader is None or leader.id == self.self_id or not self._transport.heard_from_leader():
            return None
        return leader.id

    def propose(self, events):
        if not self.is_leader:
            return defer.fail(NotLeader("not the controller leader"))
        try:
            for event in events:
                check_event(event)
        except CodecError as e:
            return defer.fail(ValueError("an event the members would refuse: %s" % e))
        d = defer.Deferred()

        def done(result, error):
            if error != FAIL_REASON.SUCCESS:
                d.errback(NotLeader("not committed (pysyncobj fail reason %s)" % error))
                return
            durable = self._journal.when_synced()
            durable.addCallbacks(lambda _: d.callback(result), d.errback)
        self._propose(list(events), done)
        return d

    def status(self):
        obj = self._syncobj
        if obj is None:
            return {"mode": "raft", "role": "stopped" if self.broken is None else "broken", "term": 0,
                    "applied": self.state.applied, "peers": dict(self.peers), "leaderId": None, "connectedPeers": [],
                    "authenticated": bool(self.credentials.secret)}
        role = "leader" if self.is_leader else ("candidate" if obj._isLeader() else "follower")
        lease_end = self._transport.lease.expires() if obj._isLeader() else None
        return {"mode": "raft", "role": role, "term": obj.raftCurrentTerm, "applied": self.state.applied,
                "commitIndex": obj.raftCommitIndex, "peers": dict(self.peers), "leaderId": self.leader_id,
                "connectedPeers": sorted(self.mesh.links), "authenticated": bool(self.credentials.secret),
                "leaseSeconds": None if lease_end is None else max(0.0, round(lease_end - self.monotonic(), 3)),
                "preVoteRounds": self._transport.prevote.rounds, "dropped": dict(self._transport.dropped),
                "refusedLinks": self.mesh.refusals.count if hasattr(self.mesh, "refusals") else 0,
                "journalSynced": self._journal.synced}
