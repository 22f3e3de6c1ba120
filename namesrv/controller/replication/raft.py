"""Several controllers: events replicated by Raft, through pysyncobj.

Why pysyncobj: a maintained, pure-Python Raft (leader election, log replication, a file journal,
snapshots with log compaction) that installs from PyPI with no service to run beside us, where
etcd would be one more daemon to deploy, watch and upgrade for a state of a few kilobytes.

How it sits in a Twisted process: pysyncobj's own ticking thread is off (``autoTick=False``) and
the reactor calls ``doTick(0)`` every ``TICK`` seconds, a non-blocking poll of its sockets. So
every Raft callback, every applied event and every snapshot runs on the reactor thread: the
state is only ever changed there, as the route tables are.

Raft talks on its own port per controller: the controller's port (``controllerDLegerPeers``,
where brokers and admin tools connect, as with Java) plus ``controllerRaftPortOffset``. DLedger
multiplexes both on one port; pysyncobj speaks its own framing, so it gets its own.

A new leader first commits an empty entry of its own term (as Java's controller appends an
initial entry) and only then serves: by then it has applied everything an earlier leader
committed, so it never answers from a state older than an answer already given.
"""

import os

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, SyncObjConsumer, replicated
from twisted.internet import defer, task
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.controller.replication import NotLeader, split_address
from namesrv.interfaces import IReplicatedLog

#: seconds between two polls of the Raft sockets (a commit takes a few of them)
TICK = 0.005


class _EventJournal(SyncObjConsumer):
    """The part of the state pysyncobj replicates and snapshots: the controller's ReplicaState."""

    log = Logger()

    def __init__(self, state, on_restored):
        super().__init__()
        self._state = state
        self._on_restored = on_restored

    @replicated
    def apply_events(self, events):
        """Applied on every controller in log order. A bad event is skipped on all of them alike."""
        for event in events:
            try:
                self._state.apply(event)
            except ValueError as e:
                self.log.error("controller: event skipped: {err}", err=e)
        return self._state.applied

    def _serialize(self):
        return self._state.to_dict()

    def _deserialize(self, data):
        self._state.load_dict(data)
        self._on_restored()


@implementer(IReplicatedLog)
class RaftLog:
    log = Logger()

    def __init__(self, state, store_dir, self_id, peers, group, raft_port_offset, reactor,
                 raft_timeouts=(0.4, 1.4), leader_fallback=2.0):
        self.state = state
        self.self_id = self_id
        self.group = group
        self.peers = dict(peers)              # id -> controller address (what brokers are told)
        self.reactor = reactor
        self.role_listeners = []
        self.store_dir = store_dir
        self._raft_to_id = {}
        for peer_id, address in self.peers.items():
            host, port = split_address(address)
            self._raft_to_id["%s:%d" % (host, port + raft_port_offset)] = peer_id
        self._self_raft = next(a for a, i in self._raft_to_id.items() if i == self_id)
        self._others = [a for a in self._raft_to_id if a != self._self_raft]
        self._timeouts = raft_timeouts
        self._leader_fallback = leader_fallback
        self._syncobj = None
        self._ticker = None
        self._serving_term = None            # the term whose first entry this leader has applied
        self._was_leader = False

    # -- life -----------------------------------------------------------------------------------
    def start(self):
        os.makedirs(self.store_dir, exist_ok=True)
        conf = SyncObjConf(
            autoTick=False, useFork=False, dynamicMembershipChange=False,
            journalFile=os.path.join(self.store_dir, "raft.journal"),
            fullDumpFile=os.path.join(self.store_dir, "raft.dump"),
            raftMinTimeout=self._timeouts[0], raftMaxTimeout=self._timeouts[1], appendEntriesPeriod=0.1,
            connectionRetryTime=1.0, connectionTimeout=2.0, leaderFallbackTimeout=self._leader_fallback,
            logCompactionMinEntries=2000, logCompactionMinTime=60, commandsWaitLeader=False)
        self._journal = _EventJournal(self.state, self._restored)
        self._syncobj = SyncObj(self._self_raft, self._others, conf, consumers=[self._journal])
        self._ticker = task.LoopingCall(self._tick)
        self._ticker.clock = self.reactor
        self._ticker.start(TICK, now=True).addErrback(
            lambda failure: self.log.failure("controller: Raft ticking stopped", failure))
        self.log.info("controller {id}: Raft on {raft} with {others}", id=self.self_id, raft=self._self_raft,
                      others=", ".join(self._others) or "no other member")

    def stop(self):
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        if self._syncobj is not None:
            self._syncobj.destroy()
            try:
                self._syncobj._onTick(0)      # let it close its sockets and journal now
            except Exception:
                pass
        self._set_serving(False)

    def _tick(self):
        self._syncobj.doTick(0)
        leader = self._syncobj._isLeader()
        term = self._syncobj.raftCurrentTerm
        if leader and self._serving_term is None:
            self._serving_term = ("pending", term)
            self._syncobj_apply([], callback=lambda result, error: self._first_entry(term, error))
        elif not leader and self._serving_term is not None:
            self._set_serving(False)
        elif leader and self._serving_term not in (("pending", term), term):
            # a new term while we stayed leader: serve again once its first entry is applied
            self._set_serving(False)

    def _first_entry(self, term, error):
        if error == FAIL_REASON.SUCCESS and self._syncobj._isLeader() and self._syncobj.raftCurrentTerm == term:
            self._serving_term = term
            self.log.info("controller {id}: leader for term {term}, serving", id=self.self_id, term=term)
            self._set_serving(True)
        elif self._serving_term == ("pending", term):
            self._serving_term = None           # try again at the next tick if still leader

    def _set_serving(self, serving):
        if not serving:
            self._serving_term = None
        if serving == self._was_leader:
            return
        self._was_leader = serving
        for listener in list(self.role_listeners):
            listener(serving)

    def _restored(self):
        self.log.info("controller {id}: state restored from a Raft snapshot ({n} broker groups)",
                      id=self.self_id, n=len(self.state.groups))

    def _syncobj_apply(self, events, callback):
        self._journal.apply_events(events, callback=callback)

    # -- IReplicatedLog -------------------------------------------------------------------------
    @property
    def is_leader(self):
        return self._was_leader and self._syncobj is not None and self._syncobj._isLeader()

    @property
    def leader_id(self):
        if self._syncobj is None:
            return None
        if self._syncobj._isLeader():
            return self.self_id
        leader = self._syncobj._getLeader()
        return self._raft_to_id.get(getattr(leader, "address", None)) if leader is not None else None

    def propose(self, events):
        if not self.is_leader:
            return defer.fail(NotLeader("not the controller leader"))
        d = defer.Deferred()

        def done(result, error):
            if error == FAIL_REASON.SUCCESS:
                d.callback(result)
            else:
                d.errback(NotLeader("not committed (pysyncobj fail reason %s)" % error))
        self._syncobj_apply(list(events), callback=done)
        return d

    def status(self):
        obj = self._syncobj
        if obj is None:
            return {"mode": "raft", "role": "stopped", "term": 0, "applied": self.state.applied,
                    "peers": dict(self.peers), "leaderId": None, "connectedPeers": []}
        role = "leader" if self.is_leader else ("candidate" if obj._isLeader() else "follower")
        connected = sorted(self._raft_to_id[node.address] for node in obj.otherNodes
                           if obj.isNodeConnected(node) and node.address in self._raft_to_id)
        return {"mode": "raft", "role": role, "term": obj.raftCurrentTerm, "applied": self.state.applied,
                "commitIndex": obj.raftCommitIndex, "peers": dict(self.peers), "leaderId": self.leader_id,
                "connectedPeers": connected}
