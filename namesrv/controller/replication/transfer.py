"""Leadership handed over without an election timeout: ``namesrv-admin transferControllerLeader``.

Raft's TimeoutNow (Ongaro's thesis, 3.10), made to hold with our pre-vote and lease:

1. The leader stops deciding: ``RaftLog.is_leader`` is False from now on, so proposals and reads get
   CONTROLLER_NOT_LEADER (brokers ask again), and nothing new enters the log.
2. It tells every voter, in its term, that it hands over to the target (a ``transfer`` notice on
   each link, stamped like a heartbeat). A member that has the notice lets the target's vote
   request of the next term through, even though it heard from a leader lately (the pre-vote's rule
   otherwise). Each member answers the notice with its stamp.
3. Once the target's log matches the leader's last entry and a majority has the notice, the leader
   sends the target ``timeout-now``; the target starts an election at once, skipping the pre-vote,
   and wins it (its log is as up to date as any). The old leader learns of the new term and steps
   down.
4. A transfer not done within ``controllerLeaderTransferTimeoutMillis`` (default: the longest
   election timeout) is abandoned: the leader sends a cancelling notice, forgets every lease echo it
   had, and serves again only once a majority has echoed a heartbeat sent after the cancel. A member
   that echoed such a heartbeat has the cancel (a link delivers in order) and refuses the target's
   vote; a member that voted for the target already is in the next term and echoes nothing of the old
   one. So the old leader and a new one never serve at once.

The write gap is the time from 1 to the new leader's first committed entry: a few round trips and
fsyncs, far below an election timeout.
"""

from typing import TYPE_CHECKING, Optional

from twisted.internet import defer
from twisted.logger import Logger

from namesrv.controller.replication import NotLeader
from namesrv.controller.replication.hooks import match_index
from namesrv.controller.replication.transport import TIMEOUT_NOW, TRANSFER

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.raft import RaftLog

ANY = "any"


class TransferRefused(Exception):
    """A transfer that cannot start (no such voter, not connected, one under way)."""


class LeadershipTransfer:
    log = Logger()

    def __init__(self, raft: "RaftLog", target: str) -> None:
        self.raft = raft
        self.target = target
        self.started = raft.monotonic()
        self.deadline = self.started + raft.timing.transfer_timeout
        self.done: defer.Deferred[str] = defer.Deferred()
        self.phase = "catching up"
        self.seen: set[str] = set()
        self.holds_writes = True
        self._notice_stamp: Optional[int] = None
        self._term = raft._syncobj.raftCurrentTerm

    @classmethod
    def start(cls, raft: "RaftLog", target: Optional[str]) -> "LeadershipTransfer":
        """A LeadershipTransfer under way (its ``done`` fires with the new leader's id), or TransferRefused."""
        if not raft.is_leader:
            raise NotLeader("not the controller leader")
        if raft.transfer is not None:
            raise TransferRefused("a leadership transfer to %s is already under way" % raft.transfer.target)
        voters = raft.other_voters()
        if target in (None, "", ANY):
            connected = [v for v in voters if raft.mesh.connected(v)]
            if not connected:
                raise TransferRefused("no other voter is connected to this leader")
            syncobj = raft._syncobj
            transport = raft._live_transport()
            target = max(connected, key=lambda v: (match_index(syncobj, transport.node(v)), v))
        elif target == raft.self_id:
            raise TransferRefused("%s already leads the group" % target)
        elif target not in voters:
            raise TransferRefused("%s is not a voter of the group (listControllers)" % target)
        elif not raft.mesh.connected(target):
            raise TransferRefused("%s is not connected to this leader" % target)
        transfer = cls(raft, target)
        raft.transfer = transfer
        transfer._announce(target)
        raft.log.info("controller {id}: handing leadership over to {target}", id=raft.self_id, target=target)
        return transfer

    def _announce(self, target: str) -> None:
        transport = self.raft._live_transport()
        self._notice_stamp = self.raft._lease().stamp()
        transport.transfer_hint = (self.raft.self_id, self._term, target)
        for voter in self.raft.other_voters():
            self.raft.mesh.send(voter, [TRANSFER, self._term, self._notice_stamp, 0, {"to": target}])

    def noticed(self, peer: str, stamp: int) -> None:
        """``peer`` has the notice (it echoed its stamp)."""
        if self._notice_stamp is not None and stamp >= self._notice_stamp:
            self.seen.add(peer)

    def tick(self) -> None:
        raft = self.raft
        syncobj = raft._syncobj
        if syncobj is None:
            return
        now = raft.monotonic()
        if not syncobj._isLeader() or syncobj.raftCurrentTerm != self._term:
            leader = raft.leader_id or (syncobj._getLeader().id if syncobj._getLeader() is not None else None)
            if leader is not None and leader != raft.self_id:
                self._finish(leader)
            elif now >= self.deadline:
                self._finish(None)
            return
        if now >= self.deadline:
            self.abandon("%s did not take over within %.1f s" % (self.target, raft.timing.transfer_timeout))
            return
        if self.phase != "catching up":
            return
        voters = raft.other_voters()
        majority = (len(voters) + 1) // 2          # others needed beside this leader
        last = raft._live_journal()[-1][1]
        caught_up = match_index(syncobj, raft._live_transport().node(self.target)) >= last
        if caught_up and len(self.seen & set(voters)) >= majority and self.target in self.seen:
            raft.mesh.send(self.target, [TIMEOUT_NOW, self._term, 0, 0, {}])
            self.phase = "timeout-now sent"

    def _finish(self, leader: Optional[str]) -> None:
        raft = self.raft
        raft.transfer = None
        raft._live_transport().transfer_hint = None
        if leader is None:
            self.done.errback(NotLeader("leadership left this controller during the transfer; no leader is known "
                                        "yet"))
            return
        raft.log.info("controller {id}: leadership handed over to {leader} in {ms:.0f} ms", id=raft.self_id,
                      leader=leader, ms=(raft.monotonic() - self.started) * 1000)
        self.done.callback(leader)

    def abandon(self, why: str) -> None:
        """Serve again: cancel the notice; the lease counts only heartbeats sent from now on."""
        raft = self.raft
        raft.transfer = None
        transport = raft._live_transport()
        transport.transfer_hint = None
        stamp = raft._lease().stamp()
        raft._lease().restart()
        for voter in raft.other_voters():
            raft.mesh.send(voter, [TRANSFER, self._term, stamp, 0, {"to": ""}])
        raft.log.warn("controller {id}: leadership transfer to {target} abandoned ({why}); {id} leads again once a "
                      "majority hears it", id=raft.self_id, target=self.target, why=why)
        self.done.errback(TransferRefused("transfer to %s abandoned: %s; %s leads again" % (self.target, why,
                                                                                        raft.self_id)))

    def status(self) -> dict[str, object]:
        return {"target": self.target, "phase": self.phase, "seconds": round(self.raft.monotonic() - self.started, 3),
                "noticed": sorted(self.seen)}
