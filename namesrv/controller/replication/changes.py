"""Changing the controller group while it runs: add a learner, promote it, remove a member.

The operator's commands (``namesrv-admin addController``, ``promoteController``,
``removeController``, ``listControllers``; request codes in ``protocol/codes.py``) end here, on
the leader. Each change is one configuration entry (``membership.py``), and the rules that make
single-server changes safe are checked before it is proposed:

- only a leader that serves (its term's first entry committed, its lease valid) proposes one;
- at most one is pending: none while a configuration entry of the log is not committed yet;
- a member is added as a learner: it gets the log, or a snapshot when it is too far behind, and
  counts for no majority; it is promoted to voter only once it has everything committed (so that a
  new voter never stalls the commits it is part of);
- removing the leader is refused until leadership was handed over (``transfer.py``);
- a change while a leadership transfer is under way is refused.

The answer comes once the entry is committed and on the leader's disk. ``members_status`` is what
``listControllers``, the status page and the metrics show: every member's role, whether it leads,
how far its log is behind the leader's and when the leader last heard from it.
"""

from typing import TYPE_CHECKING, Any, Optional

from pysyncobj import FAIL_REASON
from twisted.internet import defer

from namesrv.controller.replication import NotLeader
from namesrv.controller.replication.hooks import match_index
from namesrv.controller.replication.membership import LEARNER, VOTER, Configuration, check_address, check_id
from namesrv.controller.replication.values import CodecError

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.raft import RaftLog


class ChangeRefused(Exception):
    """A change the group's rules do not allow now (the remark says which and what to do)."""


class MembershipChanges:
    def __init__(self, raftlog: "RaftLog") -> None:
        self.raft = raftlog
        self.proposing: Optional[Configuration] = None       # the configuration proposed here and not settled yet

    # -- the rules ---------------------------------------------------------------------------------------
    def _check_leader(self) -> None:
        raft = self.raft
        if not raft.is_leader:
            raise NotLeader("not the controller leader")
        if raft.transfer is not None:
            raise ChangeRefused("a leadership transfer is under way; try again once it is done")
        if self.proposing is not None:
            raise ChangeRefused("a configuration change is still pending (%s): one change at a time, try again once "
                                "it is committed" % self.proposing.describe())
        syncobj = raft._syncobj
        pending = raft._live_journal().uncommitted_configurations(syncobj.raftCommitIndex)
        if pending:
            raise ChangeRefused("a configuration change is still pending (log entry %d): one change at a time, try "
                                "again once it is committed" % pending[-1])

    def add(self, member: str, address: str) -> "defer.Deferred[Configuration]":
        """``member`` joins as a learner at ``address``."""
        self._check_leader()
        try:
            check_id(member)
            check_address(address)
        except CodecError as e:
            raise ChangeRefused(str(e))
        configuration = self.raft.configuration
        if member in configuration.members:
            raise ChangeRefused("%s is already a %s of the group" % (member, configuration.role(member)))
        taken = [m for m, a in configuration.addresses().items() if a == address]
        if taken:
            raise ChangeRefused("%s is the address of %s" % (address, taken[0]))
        return self._propose(configuration.with_member(member, address, LEARNER))

    def promote(self, member: str) -> "defer.Deferred[Configuration]":
        """A learner that has caught up becomes a voter."""
        self._check_leader()
        configuration = self.raft.configuration
        role = configuration.role(member)
        if role is None:
            raise ChangeRefused("%s is not a member of the group (addController first)" % member)
        if role == VOTER:
            raise ChangeRefused("%s is already a voter" % member)
        syncobj = self.raft._syncobj
        caught_up = match_index(syncobj, self.raft._live_transport().node(member))
        if caught_up < syncobj.raftCommitIndex:
            raise ChangeRefused("%s has not caught up yet (its log matches up to entry %d, the group has committed "
                                "%d): promote it once listControllers shows it with no lag"
                                % (member, caught_up, syncobj.raftCommitIndex))
        return self._propose(configuration.with_member(member, configuration.addresses()[member], VOTER))

    def remove(self, member: str) -> "defer.Deferred[Configuration]":
        """A member leaves the group (the leader itself only after handing over leadership)."""
        self._check_leader()
        configuration = self.raft.configuration
        if member not in configuration.members:
            raise ChangeRefused("%s is not a member of the group" % member)
        if member == self.raft.self_id:
            raise ChangeRefused("%s leads the group: hand leadership over first (namesrv-admin "
                                "transferControllerLeader), then remove it" % member)
        return self._propose(configuration.without_member(member))

    def _propose(self, configuration: Configuration) -> "defer.Deferred[Configuration]":
        raft = self.raft
        d: defer.Deferred[Configuration] = defer.Deferred()
        self.proposing = configuration

        def committed(result: Any, error: int) -> None:
            self.proposing = None
            if error != FAIL_REASON.SUCCESS:
                d.errback(NotLeader("the configuration change was not committed (pysyncobj fail reason %s)" % error))
                return
            raft._live_journal().when_synced().addCallbacks(lambda _: d.callback(configuration), d.errback)
        raft.propose_configuration(configuration, committed)
        return d

    # -- what listControllers shows -------------------------------------------------------------------------
    def members_status(self) -> list[dict[str, object]]:
        """One row per member of the configuration in force: id, address, role, leader, and on the leader its
        log's lag behind the leader's and the seconds since it was last heard from."""
        raft = self.raft
        syncobj, mesh = raft._syncobj, raft.mesh
        leading = syncobj is not None and syncobj._isLeader()
        last_index = raft._journal[-1][1] if raft._journal is not None and len(raft._journal) else 0
        leader = raft.leader_id
        now = raft.monotonic()
        last_in = getattr(mesh, "_last_in", {})
        rows: list[dict[str, object]] = []
        for member, (address, role) in sorted(raft.configuration.members.items()):
            row = {"id": member, "address": address, "role": role, "leader": member == leader,
                   "self": member == raft.self_id, "connected": member == raft.self_id or mesh.connected(member)}
            if member == raft.self_id:
                row["lag"] = 0 if leading else None
                row["lastContactSeconds"] = 0.0
            else:
                row["lag"] = max(0, last_index - match_index(syncobj, raft._live_transport().node(member))) if leading \
                    else None
                heard = last_in.get(member)
                row["lastContactSeconds"] = round(now - heard, 3) if heard is not None else None
            rows.append(row)
        return rows
