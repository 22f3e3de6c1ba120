"""Several controllers: events replicated by Raft (pysyncobj's), on our transport, journal and guards.

Why pysyncobj: a maintained pure-Python Raft (elections, log replication, snapshots with log
compaction) that installs from PyPI with nothing to run beside us; etcd would be one more daemon
and two more ports per controller for a state of a few kilobytes, and DLedger's users expect one
address per controller. What pysyncobj does unsafely is replaced (``hooks.py``): its pickled
transport by the authenticated member mesh (``members.py``, ``mesh.py``, ``transport.py``), its
pickled commands and snapshots by msgpack (``codec.py``, ``snapshot.py``), its unsynced mmap
journal by records fsynced before any message depends on them (``journal.py``, ``disk.py``), its
snapshots by ours, durable before the log shrinks (``snapshotstore.py``), its membership by the
group's configuration in the log (``membership.py``, ``changes.py``), and its elections get a
pre-vote, its leader a read lease (``quorum.py``) and a leadership transfer (``transfer.py``).

How it sits in a Twisted process: pysyncobj's ticking thread is off (``autoTick=False``). The
reactor ticks it every ``TICK`` seconds (for its timers) and right after each message or
proposal, so every Raft step, every applied event and every snapshot happens on the reactor
thread; only the disk's writes and fsyncs run in a thread.

A new leader first commits an empty entry of its own term (as Java's controller appends an
initial entry) and only then serves: by then it has applied everything an earlier leader
committed. It answers only while its lease holds (``is_leader``); reads and decisions on a
controller that may have been deposed get CONTROLLER_NOT_LEADER.
"""

import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Optional, Union

from pysyncobj import FAIL_REASON, SyncObjConf, SyncObjConsumer, replicated
from twisted.internet import defer, task
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.controller.replication import NotLeader, split_address
from namesrv.controller.replication import fencing, hooks, snapshot
from namesrv.controller.replication.changes import MembershipChanges
from namesrv.controller.replication.codec import CodecError, check_event
from namesrv.controller.replication.disk import Disk, FileDisk
from namesrv.controller.replication.journal import DurableJournal, JournalError
from namesrv.controller.replication.identity import MemberIdentity
from namesrv.controller.replication.members import Credentials, GroupState
from namesrv.controller.replication.membership import Configuration
from namesrv.controller.replication.mesh import MemberMesh
from namesrv.controller.replication.quorum import LeaderLease, PreVote
from namesrv.controller.replication.transport import NOTE, PREVOTE, MemberNode, MemberTransport
from namesrv.controller.replication.snapshotstore import SnapshotStore
from namesrv.controller.replication.transfer import LeadershipTransfer
from namesrv.controller.replication.transport import PREVOTE, MemberNode, MemberTransport
from namesrv.controller.state import Event, ReplicaState
from namesrv.interfaces import IReplicatedLog

if TYPE_CHECKING:   # types only
    from twisted.internet.interfaces import IDelayedCall

    from namesrv.context import IServerReactor

#: seconds between two ticks of pysyncobj's timers (messages and proposals tick at once)
TICK = 0.02
JOURNAL_FILE = "raft.journal"
SNAPSHOT_FILE = "raft.snapshot"


class RaftTiming:
    """Raft's timers and the store's bounds: election timeout range, heartbeat period, how long a leader
    without a majority stays, when a snapshot replaces the log, and how long a leadership transfer may take."""

    def __init__(self, min_timeout: float = 0.4, max_timeout: float = 1.4, heartbeat: float = 0.1,
                 leader_fallback: float = 2.0, compaction_entries: int = 20000, compaction_seconds: float = 3600,
                 compaction_bytes: int = 16 << 20, store_max_bytes: int = 64 << 20,
                 transfer_timeout: Optional[float] = None, snapshot_chunk: int = 1 << 20) -> None:
        self.min_timeout = min_timeout
        self.max_timeout = max_timeout
        self.heartbeat = heartbeat
        self.leader_fallback = leader_fallback
        #: a snapshot replaces the log once it holds this many entries or bytes, or this long after the last one
        self.compaction_entries = compaction_entries
        self.compaction_seconds = compaction_seconds
        self.compaction_bytes = compaction_bytes
        #: a snapshot larger than this is refused from the leader (and warned about when written)
        self.store_max_bytes = store_max_bytes
        #: a transfer not done by then is abandoned and the old leader serves again (default: the longest election timeout)
        self.transfer_timeout = transfer_timeout if transfer_timeout is not None else max_timeout
        self.snapshot_chunk = snapshot_chunk


class RaftStartError(ValueError):
    """This controller's Raft state on disk cannot be used: say which file and why, and do not start."""


def _not_used(*args: object) -> NoReturn:
    raise hooks.HookError("pysyncobj's own serializer is replaced by snapshotstore.SnapshotStore")


class _EventConsumer(SyncObjConsumer):
    """The part of the state pysyncobj replicates: the controller's ReplicaState, changed by events, and the
    group's configuration (its members), applied when committed."""

    log = Logger()

    def __init__(self, state: ReplicaState, members_applied: Callable[[Any], int]) -> None:
        super().__init__()
        self._state = state
        self._members_applied = members_applied

    @replicated
    def apply_events(self, events: list[Event]) -> int:
        """Applied on every controller in log order. A bad event is skipped on all of them alike."""
        for event in events:
            try:
                self._state.apply(event)
            except ValueError as e:
                self.log.error("controller: event skipped: {err}", err=e)
        return self._state.applied

    @replicated
    def apply_members(self, configuration: Any) -> int:
        """A configuration of the group, committed (it took effect on every member when it was appended)."""
        return self._members_applied(configuration)


@implementer(IReplicatedLog)
class RaftLog:
    log = Logger()
    applies_at_once = False

    def __init__(self, state: ReplicaState, store_dir: str, self_id: str, peers: Mapping[str, str], group: str,
                 reactor: "IServerReactor", secrets: Union[bytes, Sequence[bytes], None] = None,
                 identity: Optional[MemberIdentity] = None, timing: Optional[RaftTiming] = None,
                 mesh: Optional[MemberMesh] = None, disk: Optional[Disk] = None,
                 monotonic: Callable[[], float] = time.monotonic, rng: Optional[random.Random] = None,
                 force_new_group: bool = False, join: bool = False) -> None:
        self.state = state
        self.self_id = self_id
        self.group = group
        # a member joining a running group has no vote until the group's configuration gives it one
        self.static = Configuration.static(peers, learners=[self_id] if join else ())
        self.configuration = self.static            # in force: the last one in the log
        self.applied_configuration = self.static    # as of the last applied entry (what a snapshot holds)
        self.self_address = peers[self_id]
        self.reactor = reactor
        self.role_listeners: list[Callable[[bool], object]] = []
        #: ``callback(peer, body)`` for each note another member sends (``send_note``)
        self.note_listeners: list[Callable[[str, Any], object]] = []
        self.store_dir = store_dir
        self.timing = timing or RaftTiming()
        self.monotonic = monotonic
        self.rng = rng or random.Random()
        self.force_new_group = force_new_group
        self.credentials = Credentials(self_id, secrets, identity=identity, knows=self._knows,
                                       state=self._group_state, fenced=self._fenced, is_fenced=self._left_behind)
        others = {peer: split_address(address) for peer, address in peers.items() if peer != self_id}
        self.mesh = mesh if mesh is not None else MemberMesh(self.credentials, others, reactor, monotonic)
        self._disk = disk
        self.journal_path = os.path.join(store_dir, JOURNAL_FILE)
        self.snapshot_path = os.path.join(store_dir, SNAPSHOT_FILE)
        #: pysyncobj's SyncObj (hooks.SafeSyncObj) while started; Any: pysyncobj is untyped
        self._syncobj: Any = None
        self._transport: Optional[MemberTransport] = None
        self._journal: Optional[DurableJournal] = None
        self._store: Optional[SnapshotStore] = None
        self._consumer: Optional[_EventConsumer] = None
        self._ticker: Optional[task.LoopingCall] = None
        self._poked: Optional["IDelayedCall"] = None
        #: the term this leader serves in, ("pending", term) until its first entry is in, or None
        self._serving_term: Union[int, tuple[str, int], None] = None
        self._serving = False
        self._seen: tuple[Optional[bool], Optional[int]] = (None, None)
        self.broken: Optional[BaseException] = None
        self.fenced_reason: Optional[str] = None
        self.removed = False
        self.snapshots_loaded = 0
        self.transfer: Optional[LeadershipTransfer] = None      # while one is under way
        self.changes: Optional[MembershipChanges] = None        # once started

    @property
    def peers(self) -> dict[str, str]:
        """{id: 'host:port'} of every member of the configuration in force (voters and learners)."""
        return self.configuration.addresses()

    # -- life -----------------------------------------------------------------------------------
    def start(self) -> None:
        os.makedirs(self.store_dir, exist_ok=True)
        disk = self._disk if self._disk is not None else FileDisk(self.journal_path, self.reactor)
        self._disk = disk
        reason = fencing.read_marker(disk)
        if reason is not None:
            self.fenced_reason = reason
            self.log.critical("controller {id}: {reason}", id=self.self_id, reason=reason)
            return
        store = SnapshotStore(disk, self, chunk_size=self.timing.snapshot_chunk, max_bytes=self.timing.store_max_bytes)
        try:
            decoded = store.load()
        except snapshot.SnapshotError as e:
            raise RaftStartError("controller Raft snapshot %s cannot be read (%s): move this member's store "
                                 "aside to let it catch up from the others" % (self.snapshot_path, e))
        try:
            journal = DurableJournal(disk, base=(0, self.static))
        except JournalError as e:
            raise RaftStartError("controller Raft journal %s: %s" % (self.journal_path, e))
        if decoded is not None:
            journal.reconcile(decoded[2], decoded[1])
            journal.set_base(decoded[1][1], decoded[3] or self.static)
        if self.force_new_group:
            fencing.force_new_group(self, journal, decoded)
        journal.on_failure = self._broke
        in_force = journal.configuration()
        assert in_force is not None         # the journal has a base: the static configuration, or the snapshot's
        self.configuration = in_force[1]
        self._report_configuration()
        voters = [m for m in self.configuration.voters() if m != self.self_id]
        transport = MemberTransport(self.self_id, voters, self.mesh, journal, self.monotonic, self.timing.min_timeout)
        transport.poke = self._poke
        transport.note_handler = self._note_received
        transport.call_soon = lambda f: self.reactor.callLater(0, f)
        transport.transfer = lambda: self.transfer
        conf = SyncObjConf(
            autoTick=False, useFork=False, dynamicMembershipChange=False, journalFile=self.journal_path,
            fullDumpFile=self.snapshot_path, serializer=_not_used, deserializer=_not_used,
            raftMinTimeout=self.timing.min_timeout, raftMaxTimeout=self.timing.max_timeout,
            appendEntriesPeriod=self.timing.heartbeat, leaderFallbackTimeout=self.timing.leader_fallback,
            appendEntriesUseBatch=False, appendEntriesBatchSizeBytes=1 << 20,
            logCompactionMinEntries=self.timing.compaction_entries, logCompactionMinTime=self.timing.compaction_seconds,
            logCompactionBatchSize=self.timing.snapshot_chunk, commandsWaitLeader=False)
        self._consumer = _EventConsumer(self.state, self._members_applied)
        hooks.prepare_journal(self.journal_path, journal)
        try:
            syncobj = hooks.SafeSyncObj(MemberNode(self.self_id), [transport.node(v) for v in voters], conf,
                                        consumers=[self._consumer], transport=transport)
        finally:
            hooks.forget_journal(self.journal_path)
        if sorted(syncobj._idToMethod) != [0, 1] or getattr(syncobj._idToMethod[1], "origName", None) != "apply_members":
            raise hooks.HookError("pysyncobj numbered the replicated calls %s; apply_events must be 0, apply_members 1"
                                  % sorted(syncobj._idToMethod))
        hooks.check_instance(syncobj)
        hooks.use_snapshot_store(syncobj, store)
        transport.syncobj = syncobj
        transport.lease = LeaderLease(self.monotonic, self.other_voters, self.timing.min_timeout)
        transport.prevote = PreVote(transport, self.other_voters, self.monotonic, self.rng, self.timing.min_timeout,
                                    self.timing.max_timeout, self._send_prevote, voting=self.voting)
        syncobj.election_gate = transport.prevote.gate
        self._syncobj, self._transport, self._journal, self._store = syncobj, transport, journal, store
        journal.on_configuration = self._configuration_in_force
        self._configuration_in_force(self.configuration)
        if decoded is not None:
            hooks.load_snapshot(syncobj)
        self.changes = MembershipChanges(self)
        self.mesh.start(transport)
        self._ticker = task.LoopingCall(self._tick)
        self._ticker.clock = self.reactor
        self._ticker.start(TICK, now=True).addErrback(
            lambda failure: self.log.failure("controller: Raft ticking stopped", failure))
        self.log.info("controller {id}: Raft member of {members}, on its controller port ({auth})", id=self.self_id,
                      members=self.configuration.describe(),
                      auth="members prove the group's secret and their own keys" if self.credentials.secret
                      else "member authentication DISABLED")

    def stop(self) -> "defer.Deferred[None]":
        """Leave; a Deferred that fires once every record written is on disk."""
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        if self._poked is not None and self._poked.active():
            self._poked.cancel()
        if self.transfer is not None:
            self.transfer.abandon("this controller stops")
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

    def _broke(self, error: BaseException) -> None:
        self.broken = error
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        self.mesh.stop()
        self._set_serving(False)

    def _report_configuration(self) -> None:
        if self.configuration != self.static:
            self.log.info("controller {id}: the group's configuration is the one in its log ({members}), not "
                          "controllerDLegerPeers'", id=self.self_id, members=self.configuration.describe())

    # -- what start() built: None before it ran, or when it found this member fenced --------------------------
    def _live_transport(self) -> MemberTransport:
        assert self._transport is not None, "the controller's Raft log is not started"
        return self._transport

    def _live_journal(self) -> DurableJournal:
        assert self._journal is not None, "the controller's Raft log is not started"
        return self._journal

    def _lease(self) -> LeaderLease:
        lease = self._live_transport().lease
        assert lease is not None            # start() gives the transport its lease and pre-vote with it
        return lease

    # -- the configuration ------------------------------------------------------------------------------
    def other_voters(self) -> list[str]:
        return [m for m in self.configuration.voters() if m != self.self_id]

    def voting(self) -> bool:
        return self.configuration.role(self.self_id) == "voter" and self.fenced_reason is None

    def _knows(self, peer: str) -> bool:
        return peer in self.configuration.members or peer in self.configuration.fenced

    def _left_behind(self, peer: str) -> bool:
        return peer in self.configuration.fenced and peer not in self.configuration.members

    def _group_state(self) -> GroupState:
        journal = self._journal
        fresh = (self._store is None or self._store.decoded is None) and (journal is None or (
            len(journal) <= 1 and not journal.configurations))
        return GroupState(self.configuration.epoch, self.configuration.generation_bytes(), fresh)

    def _configuration_in_force(self, configuration: Configuration) -> None:
        """The journal's configuration in force changed (an entry appended, or cut away): pysyncobj's members,
        the mesh's peers, the pre-vote and the lease follow at once."""
        before, self.configuration = self.configuration, configuration
        syncobj = self._syncobj
        if syncobj is not None:
            hooks.set_members(syncobj, self.other_voters(),
                              [m for m in configuration.learners() if m != self.self_id], self._live_transport().node,
                              self.mesh.connected, self.monotonic())
            for peer in set(before.voters()) - set(configuration.voters()):
                self._lease().forget(peer)
        self.mesh.set_peers({m: split_address(a) for m, a in configuration.addresses().items() if m != self.self_id})
        fencing.dial_fenced(self.mesh, configuration)
        if configuration != before:
            self.log.info("controller {id}: group configuration in force: {members}", id=self.self_id,
                          members=configuration.describe())

    def _members_applied(self, wire: Any) -> int:
        configuration = Configuration.from_wire(wire)
        self.applied_configuration = configuration
        if self.self_id not in configuration.members and not self.removed:
            self.removed = True
            self.log.warn("controller {id}: removed from the group's configuration ({members}): it takes no part "
                          "any more; stop it, or add it again", id=self.self_id, members=configuration.describe())
        return configuration.epoch

    def _fenced(self, peer: str, theirs: GroupState) -> None:
        """``peer`` proved that a forced new group left this member behind: stop for good (``fencing.py``)."""
        if self.fenced_reason is not None:
            return
        self.fenced_reason = fencing.fence(self, peer, theirs)
        self.log.critical("controller {id}: {reason}", id=self.self_id, reason=self.fenced_reason)
        self._broke(fencing.Fenced(self.fenced_reason))

    # -- ticking ----------------------------------------------------------------------------------------
    def _poke(self) -> None:
        if self._poked is None or not self._poked.active():
            self._poked = self.reactor.callLater(0, self._tick)

    def _tick(self) -> None:
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
            self._lease().reset()
        if leader and self._serving_term is None:
            self._serving_term = ("pending", term)
            self._propose([], lambda result, error: self._first_entry(term, error))
        elif not leader and self._serving_term is not None:
            self._set_serving(False)
        elif leader and self._serving_term not in (("pending", term), term):
            self._set_serving(False)        # a new term while we stayed leader: serve once its first entry is in
        if self.transfer is not None:
            self.transfer.tick()
        journal = self._live_journal()
        if journal.size > self.timing.compaction_bytes:
            syncobj.forceLogCompaction()
        journal.sync()

    def _first_entry(self, term: int, error: int) -> None:
        if error == FAIL_REASON.SUCCESS and self._syncobj is not None and self._syncobj._isLeader() \
                and self._syncobj.raftCurrentTerm == term:
            self._live_journal().when_synced().addCallback(lambda _: self._serve(term))
        elif self._serving_term == ("pending", term):
            self._serving_term = None           # try again at the next tick if still leader

    def _serve(self, term: int) -> None:
        if self._syncobj is None or not self._syncobj._isLeader() or self._syncobj.raftCurrentTerm != term:
            self._serving_term = None
            return
        self._serving_term = term
        self.log.info("controller {id}: leader for term {term}, serving", id=self.self_id, term=term)
        self._set_serving(True)

    def _set_serving(self, serving: bool) -> None:
        if not serving:
            self._serving_term = None
        if serving == self._serving:
            return
        self._serving = serving
        for listener in list(self.role_listeners):
            listener(serving)

    def send_note(self, peer: str, body: Any) -> bool:
        """A note (plain data, msgpack) to another member over its authenticated link; False when not linked."""
        syncobj = self._syncobj
        return self.mesh.send(peer, [NOTE, syncobj.raftCurrentTerm if syncobj is not None else 0, 0, 0, body])

    def _note_received(self, peer: str, body: Any) -> None:
        for listener in list(self.note_listeners):
            listener(peer, body)

    def _send_prevote(self, peer: str, body: dict[str, Any]) -> None:
        self.mesh.send(peer, [PREVOTE, self._syncobj.raftCurrentTerm, 0, 0, body])

    def _propose(self, events: list[Event], callback: Callable[[Any, int], object]) -> None:
        assert self._consumer is not None   # built by start()
        self._consumer.apply_events(events, callback=callback)
        self._poke()

    def transfer_leadership(self, target: Optional[str]) -> "defer.Deferred[str]":
        """Hand leadership over to ``target`` (a voter's id, or "any"): a Deferred firing with the new leader's
        id, or failing (TransferRefused, NotLeader) when it cannot start or was abandoned (``transfer.py``)."""
        try:
            transfer = LeadershipTransfer.start(self, target)
        except Exception as e:
            return defer.fail(e)
        self._poke()
        return transfer.done

    def propose_configuration(self, configuration: Configuration, callback: Callable[[Any, int], object]) -> None:
        assert self._consumer is not None   # built by start()
        self._consumer.apply_members(configuration.to_wire(), callback=callback)
        self._poke()

    # -- snapshots (snapshotstore.SnapshotStore's owner) -------------------------------------------------------
    def snapshot_state(self) -> tuple[dict[str, Any], Configuration]:
        """The state and the configuration as of the last applied entry, for a snapshot."""
        return self.state.to_dict(), self.applied_configuration

    def snapshot_loaded(self, decoded: snapshot.Decoded) -> None:
        state, last, prev, configuration = decoded
        try:
            self.state.load_dict(state)
        except Exception as e:
            self.log.critical("controller: Raft snapshot not loaded: {err}", err=e)
            raise
        self.applied_configuration = configuration or self.static
        self._live_journal().set_base(last[1], self.applied_configuration)
        self.snapshots_loaded += 1
        self.log.info("controller {id}: state restored from the Raft snapshot ({n} broker groups, entry {index})",
                      id=self.self_id, n=len(self.state.groups), index=last[1])

    # -- IReplicatedLog ------------------------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        """Serving, and sure of it: pysyncobj leads, this term's first entry is in, the lease holds, and no
        leadership transfer is under way."""
        syncobj = self._syncobj
        return (self._serving and syncobj is not None and syncobj._isLeader()
                and self._lease().valid() and (self.transfer is None or not self.transfer.holds_writes))

    @property
    def leader_id(self) -> Optional[str]:
        if self.is_leader:
            return self.self_id
        syncobj = self._syncobj
        if syncobj is None or self.broken is not None:
            return None
        leader = syncobj._getLeader()
        if leader is None or leader.id == self.self_id or not self._live_transport().heard_from_leader():
            return None
        return leader.id

    def propose(self, events: list[Event]) -> "defer.Deferred[object]":
        if not self.is_leader:
            return defer.fail(NotLeader("not the controller leader"))
        try:
            for event in events:
                check_event(event)
        except CodecError as e:
            return defer.fail(ValueError("an event the members would refuse: %s" % e))
        d: defer.Deferred[object] = defer.Deferred()

        def done(result: Any, error: int) -> None:
            if error != FAIL_REASON.SUCCESS:
                d.errback(NotLeader("not committed (pysyncobj fail reason %s)" % error))
                return
            durable = self._live_journal().when_synced()
            durable.addCallbacks(lambda _: d.callback(result), d.errback)
        self._propose(list(events), done)
        return d

    def status(self) -> dict[str, object]:
        obj = self._syncobj
        base = {"mode": "raft", "applied": self.state.applied, "peers": dict(self.peers),
                "authenticated": bool(self.credentials.secret), "configuration": self._configuration_status()}
        if obj is None:
            role = "fenced" if self.fenced_reason else ("stopped" if self.broken is None else "broken")
            base.update({"role": role, "term": 0, "leaderId": None, "connectedPeers": [], "members": [],
                         "fencedReason": self.fenced_reason})
            return base
        role = "leader" if self.is_leader else ("candidate" if obj._isLeader() else "follower")
        if self.configuration.role(self.self_id) == "learner":
            role = "learner"
        if self.broken is not None:
            role = "fenced" if self.fenced_reason else "broken"
        transport, journal, store, changes = self._live_transport(), self._live_journal(), self._store, self.changes
        assert store is not None and changes is not None and transport.prevote is not None   # built with pysyncobj
        lease_end = self._lease().expires() if obj._isLeader() else None
        base.update({
            "role": role, "term": obj.raftCurrentTerm, "commitIndex": obj.raftCommitIndex, "leaderId": self.leader_id,
            "connectedPeers": sorted(self.mesh.links),
            "leaseSeconds": None if lease_end is None else max(0.0, round(lease_end - self.monotonic(), 3)),
            "preVoteRounds": transport.prevote.rounds, "dropped": dict(transport.dropped),
            "refusedLinks": self.mesh.refusals.count if hasattr(self.mesh, "refusals") else 0,
            "journalSynced": journal.synced, "members": changes.members_status(),
            "lastLogIndex": journal[-1][1] if len(journal) else 0,
            "lastLogTerm": journal[-1][2] if len(journal) else 0,
            "fencedReason": self.fenced_reason,
            "store": {"journalBytes": journal.size, "snapshotBytes": store.size,
                      "maxBytes": self.timing.store_max_bytes, "snapshotsWritten": store.written,
                      "snapshotsInstalled": store.installed, "logEntries": len(journal)},
            "transfer": self.transfer.status() if self.transfer is not None else None})
        return base

    def _configuration_status(self) -> dict[str, object]:
        configuration = self.configuration
        return {"epoch": configuration.epoch, "generation": configuration.generation,
                "voters": configuration.voters(), "learners": configuration.learners(),
                "fenced": sorted(configuration.fenced)}
