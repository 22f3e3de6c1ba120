"""pysyncobj's transport, ours: its messages travel the member mesh as checked data, in Raft's order.

pysyncobj accepts a transport object; this one sits between its core and the mesh (``mesh.py``):

- **Out.** Every message pysyncobj sends waits until every journal record written before it is
  on disk (``journal.when``): a vote, a term or an acknowledged entry is never heard of before
  it is durable. The messages leave in the order pysyncobj sent them, as one envelope each:
  ``[kind, term, stamp, echo, body]``, where ``term`` is the sender's term, ``stamp`` marks a
  leader's message for the lease and ``echo`` returns the last stamp a follower saw.
- **In.** An envelope is checked (``codec.check_message``) before pysyncobj sees it. Then:
  an acknowledgement (``next_node_idx``) from an earlier term is dropped (pysyncobj's carries no
  term, so a late one could count towards a commit it was not for); a vote request is dropped
  while a leader is heard from (``quorum.py``); an echo feeds the lease.
- **Forwarded commands** are never sent: pysyncobj forwards a command proposed on a member that
  stopped leading to the new leader, which would then commit a decision made from an old state.
  We answer it at once, locally, as refused by "the leader".
- Pre-vote requests and replies travel as their own kinds, and so do notes (``NOTE``) that are not
  Raft's: the listener that takes them checks their schema itself.
- Pre-vote requests and replies travel as their own kinds, and so do a leadership transfer's
  notice, its acknowledgement and the leader's ``timeout-now`` (``transfer.py``).

A member's node is a ``MemberNode``: its id is the controller id (n0, n1, ...).
"""

import zlib
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional

from pysyncobj.config import FAIL_REASON
from pysyncobj.node import Node
from pysyncobj.transport import Transport
from twisted.logger import Logger

from namesrv.controller.replication.codec import CodecError, check_message
from namesrv.controller.replication.journal import DurableJournal
from namesrv.controller.replication.quorum import (check_prevote_reply, check_prevote_request,
                                                   check_transfer_notice)

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.mesh import MemberMesh
    from namesrv.controller.replication.quorum import LeaderLease, PreVote
    from namesrv.controller.replication.transfer import LeadershipTransfer

RAFT = "raft"
PREVOTE = "prevote"
PREVOTE_REPLY = "prevote-reply"
TERM_NOTICE = "term"
#: a note between controllers that is not Raft's (namesrv/controller/relay.py: brokers the leader does not hear)
NOTE = "note"
TRANSFER = "transfer"
TRANSFER_SEEN = "transfer-seen"
TIMEOUT_NOW = "timeout-now"


class MemberNode(Node):
    """A controller in pysyncobj's eyes: its id is the controller id.

    Its hash does not depend on the process's string-hash seed, so pysyncobj walks its sets of members in
    the same order in every run: a simulated group replays exactly from its seed."""

    def __hash__(self) -> int:
        return zlib.crc32(self.id.encode("utf-8"))


class MemberTransport(Transport):
    log = Logger()

    def __init__(self, self_id: str, peer_ids: Iterable[str], mesh: "MemberMesh", journal: DurableJournal,
                 clock: Callable[[], float], min_timeout: float) -> None:
        self.nodes = {peer: MemberNode(peer) for peer in peer_ids}
        Transport.__init__(self, None, MemberNode(self_id), list(self.nodes.values()))
        self.self_id = self_id
        self.mesh = mesh
        self.journal = journal
        self.clock = clock
        self.min_timeout = min_timeout
        #: pysyncobj's SyncObj (hooks.SafeSyncObj), set once it is built (it builds nothing of ours before); Any:
        #: pysyncobj is untyped
        self.syncobj: Any = None
        self.prevote: Optional["PreVote"] = None
        self.lease: Optional["LeaderLease"] = None
        self.poke: Callable[[], object] = lambda: None     # asks the Raft log for a tick soon (after a message)
        self.call_soon: Callable[[Callable[[], object]], object] = lambda f: f()
        #: (journal records needed, peer, envelope, force)
        self._held: deque[tuple[int, str, list[Any], bool]] = deque()
        self._leader_stamp: dict[str, int] = {}      # peer -> the latest stamp it sent us as leader
        self.last_leader_contact = clock()   # a member that just started may have missed a leader
        self._told: dict[str, float] = {}
        #: callable(peer, body) for NOTE envelopes (RaftLog.note_listeners)
        self.note_handler: Optional[Callable[[str, Any], object]] = None
        #: (leader, term, target) of a transfer announced to us (or by us): the target's vote request of term + 1
        #: may pass although a leader was heard from lately
        self.transfer_hint: Optional[tuple[str, int, str]] = None
        #: the term in which the leader told us to stand for election at once (TimeoutNow)
        self.transfer_granted: Optional[int] = None
        #: the leader's LeadershipTransfer under way, if any
        self.transfer: Callable[[], Optional["LeadershipTransfer"]] = lambda: None
        self.dropped = {"stale_ack": 0, "vote_while_led": 0, "forwarded_command": 0, "bad": 0}
        journal.synced_listeners.append(self._release)

    # -- pysyncobj's Transport ---------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return True

    def tryGetReady(self) -> None:
        pass

    def waitReady(self) -> None:
        pass

    def addNode(self, node: MemberNode) -> None:
        raise NotImplementedError("pysyncobj's membership commands are not used (membership.py)")

    def dropNode(self, node: MemberNode) -> None:
        raise NotImplementedError("pysyncobj's membership commands are not used (membership.py)")

    def node(self, peer: str) -> MemberNode:
        """The pysyncobj node of ``peer`` (one object per id, made when first needed)."""
        node = self.nodes.get(peer)
        if node is None:
            node = self.nodes[peer] = MemberNode(peer)
        return node

    def destroy(self) -> None:
        self._held.clear()

    def send(self, node: MemberNode, message: dict[str, Any]) -> bool:
        """pysyncobj sends ``message`` (its dict of plain data) to ``node``; False when it cannot now."""
        kind = message.get("type")
        if kind in ("apply_command", "apply_command_response", "timeout_now"):
            return self._refuse_forwarding(message)
        stamp = self.lease.stamp() if kind == "append_entries" and self.lease is not None else 0
        echo = self._leader_stamp.get(node.id, 0) if kind == "next_node_idx" else 0
        envelope = [RAFT, self.syncobj.raftCurrentTerm if self.syncobj is not None else 0, stamp, echo, message]
        # a snapshot chunk is written even to a peer that is slow to read: one snapshot at most is in flight
        # per link, and a chunk lost would make the member start the transfer again
        force = message.get("serialized") is not None
        if self._held or self.journal.dirty:
            self._held.append((self.journal.written, node.id, envelope, force))
            self.journal.sync()
            return self.mesh.connected(node.id)
        return self.mesh.send(node.id, envelope, force=force)

    def _refuse_forwarding(self, message: dict[str, Any]) -> bool:
        """pysyncobj forwards a command to the leader when this member stopped leading meanwhile; the
        leader would commit a decision made from an older state. Refuse it here, as the leader would."""
        if message.get("type") == "apply_command" and "request_id" in message:
            self.dropped["forwarded_command"] += 1
            refusal = {"type": "apply_command_response", "request_id": message["request_id"],
                       "error": FAIL_REASON.NOT_LEADER}
            any_node = next(iter(self.nodes.values()))
            self.call_soon(lambda: self._onMessageReceived(any_node, refusal))
        return False

    def _release(self, synced: int) -> None:
        while self._held and self._held[0][0] <= synced:
            _, peer, envelope, force = self._held.popleft()
            self.mesh.send(peer, envelope, force=force)

    # -- the mesh's receiver -------------------------------------------------------------------------------
    def peer_connected(self, peer: str) -> None:
        self._onNodeConnected(self.node(peer))

    def peer_disconnected(self, peer: str) -> None:
        self._onNodeDisconnected(self.node(peer))

    def value_received(self, peer: str, value: Any) -> None:
        """An envelope from ``peer`` (Any: decoded msgpack, checked here before pysyncobj sees it)."""
        try:
            kind, term, stamp, echo, body = value
            if not (isinstance(kind, str) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                  for v in (term, stamp, echo))):
                raise CodecError("bad envelope")
            if kind == RAFT:
                self._raft(peer, term, stamp, echo, check_message(body))
            elif kind == PREVOTE:
                assert self.prevote is not None      # raft.py gives it before the mesh starts
                reply = self.prevote.request(peer, check_prevote_request(body))
                self.mesh.send(peer, [PREVOTE_REPLY, self.syncobj.raftCurrentTerm, 0, 0, reply])
            elif kind == PREVOTE_REPLY:
                assert self.prevote is not None
                self.prevote.reply(peer, check_prevote_reply(body))
                self.poke()
            elif kind == TERM_NOTICE:
                self._term_notice(peer, term, check_prevote_request(body))
            elif kind == NOTE:
                if self.note_handler is not None:
                    self.note_handler(peer, body)     # checks its own schema; never raises
            elif kind == TRANSFER:
                self._transfer_notice(peer, term, stamp, check_transfer_notice(body))
            elif kind == TRANSFER_SEEN:
                self._transfer_seen(peer, term, echo)
            elif kind == TIMEOUT_NOW:
                self._timeout_now(peer, term)
            else:
                raise CodecError("unknown envelope kind %r" % (kind,))
        except (CodecError, ValueError, TypeError) as e:
            self.dropped["bad"] += 1
            self.log.warn("controller: a message from member {peer} refused ({err}): link closed", peer=peer, err=e)
            self.mesh.drop(peer)

    def _raft(self, peer: str, term: int, stamp: int, echo: int, message: dict[str, Any]) -> None:
        current = self.syncobj.raftCurrentTerm
        kind = message["type"]
        if kind == "append_entries" and message["term"] < current:
            self._tell_term(peer)
        elif kind == "append_entries":
            self.last_leader_contact = self.clock()
            self._leader_stamp[peer] = stamp
            if self.prevote is not None:
                self.prevote.reset()
        elif kind == "next_node_idx":
            if term != current:
                self.dropped["stale_ack"] += 1
                return
            if self.lease is not None and self.syncobj._isLeader():
                self.lease.echoed(peer, echo)
        elif kind == "request_vote" and (self.heard_from_leader() or self.leading_with_lease()) \
                and not self._transfer_vote(peer, message["term"]):
            self.dropped["vote_while_led"] += 1
            return
        self._onMessageReceived(self.node(peer), message)
        self.poke()

    def _tell_term(self, peer: str) -> None:
        """A leader of an older term is sending us entries. Our vote requests in our newer term are refused
        while the others hear from it (``heard_from_leader``), and pysyncobj answers nothing to an older
        term's entries, so nobody would ever learn of our term: tell the leader (etcd does the same)."""
        now = self.clock()
        if now - self._told.get(peer, float("-inf")) < self.min_timeout / 2:
            return
        self._told[peer] = now
        last_index, last_term = self.last_log()
        self.mesh.send(peer, [TERM_NOTICE, self.syncobj.raftCurrentTerm, 0, 0,
                              {"term": self.syncobj.raftCurrentTerm, "lastIndex": last_index, "lastTerm": last_term}])

    def _term_notice(self, peer: str, term: int, body: dict[str, Any]) -> None:
        """A member is in a newer term than ours: Raft says step down to it. pysyncobj does that on a vote
        request of that term, so it gets the one the member sent (and that ``_raft`` may have held back)."""
        if body["term"] <= self.syncobj.raftCurrentTerm or body["term"] != term:
            return
        self.dropped["newer_term"] = self.dropped.get("newer_term", 0) + 1
        self._onMessageReceived(self.node(peer), {"type": "request_vote", "term": body["term"],
                                                   "last_log_index": body["lastIndex"],
                                                   "last_log_term": body["lastTerm"]})
        self.poke()

    # -- leadership transfer (transfer.py) --------------------------------------------------------------------
    def _leader_is(self, peer: str, term: int) -> bool:
        leader = self.syncobj._getLeader()
        return term == self.syncobj.raftCurrentTerm and leader is not None and leader.id == peer

    def _transfer_notice(self, peer: str, term: int, stamp: int, body: dict[str, Any]) -> None:
        """The leader hands over to ``body["to"]`` ("": it gave up): remember it, and say we have it."""
        if not self._leader_is(peer, term):
            return
        self.transfer_hint = (peer, term, body["to"]) if body["to"] else None
        self._leader_stamp[peer] = max(stamp, self._leader_stamp.get(peer, 0))
        self.mesh.send(peer, [TRANSFER_SEEN, term, 0, stamp, {}])

    def _transfer_seen(self, peer: str, term: int, echo: int) -> None:
        if term != self.syncobj.raftCurrentTerm or not self.syncobj._isLeader():
            return
        if self.lease is not None:
            self.lease.echoed(peer, echo)
        transfer = self.transfer()
        if transfer is not None:
            transfer.noticed(peer, echo)

    def _timeout_now(self, peer: str, term: int) -> None:
        """Our leader tells us to stand for election now: pysyncobj's TimeoutNow, past our pre-vote."""
        hint = self.transfer_hint
        if not self._leader_is(peer, term) or hint is None or hint[2] != self.self_id:
            return
        self.transfer_granted = term
        self._onMessageReceived(self.node(peer), {"type": "timeout_now", "term": term})
        self.poke()

    def _transfer_vote(self, peer: str, term: int) -> bool:
        """A vote request the announced transfer lets through: from its target, for the next term."""
        hint = self.transfer_hint
        return hint is not None and hint[2] == peer and term == hint[1] + 1

    def transfer_election(self) -> bool:
        """The pre-vote's gate: this member was told to stand now (once, in the term it was told in)."""
        if self.transfer_granted is not None and self.transfer_granted == self.syncobj.raftCurrentTerm:
            self.transfer_granted = None
            return True
        return False

    # -- what the pre-vote rules read (quorum.PreVote's member) -----------------------------------------------
    def term(self) -> int:
        return self.syncobj.raftCurrentTerm

    def last_log(self) -> tuple[int, int]:
        last = self.journal[-1]
        return last[1], last[2]

    def leading(self) -> bool:
        return self.syncobj._isLeader()

    def leading_with_lease(self) -> bool:
        return self.syncobj._isLeader() and self.lease is not None and self.lease.valid()

    def heard_from_leader(self) -> bool:
        return self.clock() - self.last_leader_contact < self.min_timeout
