"""Two guards pysyncobj lacks: a pre-vote before any election, and a lease before any read.

**Pre-vote** (Ongaro's thesis, 9.6). pysyncobj starts an election by raising its term at once; a
member cut off from the leader (but not from everyone) then deposes a healthy leader when it
comes back, and every partial partition becomes a string of elections. Here a member whose
election timer ran out first asks the others whether they *would* vote for it in the next term;
only when a majority says yes does pysyncobj raise its term (``PreVote.gate`` is the hook
``hooks.py`` gives it). A member says yes only if it has not heard from a leader for
``min_timeout`` (so it would time out too), is not leading itself, and the asker's log is at
least as up to date as its own. Real votes are held to the same "no leader heard from lately"
rule (``heard_from_leader``): that is what makes the lease below sound.

**Lease** (thesis 6.4.1). A leader may answer a read from its own state only while no other
leader can exist. Every heartbeat the leader sends carries a stamp, and each follower echoes the
latest stamp it has seen; a follower that echoes a stamp sent at time *s* heard from the leader at
or after *s*, and will refuse any vote until ``min_timeout`` after that. So once a majority (the
leader included) has echoed stamps sent at or after *s*, no other leader can be elected before
*s* + ``min_timeout``. The lease ends earlier than that, by ``DRIFT`` (clock rates differ a little).
A leader paused by SIGSTOP, cut off by a partition, or stalled, finds its lease run out and
answers CONTROLLER_NOT_LEADER until a majority has heard from it again.
"""

import itertools
import random
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.transport import MemberTransport

#: the part of ``min_timeout`` a lease gives up to clock-rate differences between members
DRIFT = 0.2
#: stamps remembered (heartbeats go out every 0.1 s; an echo older than this is no use)
STAMPS_KEPT = 512


class LeaderLease:
    """When this leader's reads are safe: see the module docstring. ``voters()`` are the other voters of the
    configuration in force (it changes with the group's membership)."""

    def __init__(self, clock: Callable[[], float], voters: Callable[[], Collection[str]], min_timeout: float) -> None:
        self.clock = clock
        self.voters = voters
        self.duration = min_timeout * (1.0 - DRIFT)
        self._stamps: dict[int, float] = {}
        self._counter = itertools.count(1)
        self._acks: dict[str, float] = {}
        self._floor = float("-inf")

    def stamp(self) -> int:
        """A stamp for a message going out now."""
        stamp = next(self._counter)
        self._stamps[stamp] = self.clock()
        self._stamps.pop(stamp - STAMPS_KEPT, None)      # stamps only grow: the oldest kept goes
        return stamp

    def echoed(self, peer: str, stamp: int) -> None:
        """``peer`` (in this leader's term) has seen the message stamped ``stamp``."""
        sent = self._stamps.get(stamp)
        if sent is not None and sent >= self._floor and sent > self._acks.get(peer, float("-inf")):
            self._acks[peer] = sent

    def reset(self) -> None:
        """A new term or a new role: earlier echoes say nothing about it."""
        self._acks.clear()

    def restart(self) -> None:
        """A leadership transfer was abandoned: only echoes of messages sent from now on count."""
        self._acks.clear()
        self._floor = self.clock()

    def forget(self, peer: str) -> None:
        """``peer`` echoed a stamp it must not be counted for any more (it left the voters)."""
        self._acks.pop(peer, None)

    def expires(self) -> Optional[float]:
        """The time until which no other leader can exist, or None without a majority's echoes."""
        voters = set(self.voters())
        times = sorted((t for peer, t in self._acks.items() if peer in voters), reverse=True)
        others = (len(voters) + 1) // 2
        if others == 0:
            return float("inf")
        if len(times) < others:
            return None
        return times[others - 1] + self.duration

    def valid(self) -> bool:
        end = self.expires()
        return end is not None and self.clock() < end


class PreVote:
    """The pre-vote rounds of one member. ``member`` gives what the rules read (``transport.MemberTransport``);
    ``voters()`` are the other voters of the configuration in force, ``voting()`` whether this member is one."""

    def __init__(self, member: "MemberTransport", voters: Callable[[], Collection[str]], clock: Callable[[], float],
                 rng: random.Random, min_timeout: float, max_timeout: float,
                 send: Callable[[str, dict[str, Any]], object], voting: Callable[[], bool] = lambda: True) -> None:
        self.member = member
        self.voters = voters
        self.voting = voting
        self.clock = clock
        self.rng = rng
        self.min_timeout = min_timeout
        self.max_timeout = max_timeout
        self.send = send                 # send(peer, body)
        self._round: Optional[tuple[int, set[str], float]] = None     # (term, granted ids, expiry)
        self.rounds = 0
        self.elections_allowed = 0

    @property
    def majority(self) -> int:
        return (len(self.voters()) + 1) // 2 + 1

    def gate(self) -> bool:
        """pysyncobj's election timer ran out: may it raise its term and ask for votes now? Never for a
        learner or a member the configuration no longer holds; at once for the only voter."""
        if not self.voting():
            return False
        if self.member.transfer_election():
            self.elections_allowed += 1
            return True
        if not self.voters():
            self.elections_allowed += 1
            return True
        term = self.member.term() + 1
        now = self.clock()
        current = self._round
        if current is not None and current[0] == term and len(current[1] & set(self.voters()) | {self.member.self_id}) \
                >= self.majority:
            self._round = None
            self.elections_allowed += 1
            return True
        if current is None or current[0] != term or now >= current[2]:
            self._start(term, now)
        return False

    def _start(self, term: int, now: float) -> None:
        self._round = (term, {self.member.self_id}, now + self.rng.uniform(self.min_timeout, self.max_timeout))
        self.rounds += 1
        last_index, last_term = self.member.last_log()
        for peer in self.voters():
            self.send(peer, {"term": term, "lastIndex": last_index, "lastTerm": last_term})

    def request(self, peer: str, body: dict[str, Any]) -> dict[str, Any]:
        """Another member asks: would we vote for it in ``term``? The answer changes nothing here."""
        return {"term": body["term"], "granted": self.would_vote(body["term"], body["lastIndex"], body["lastTerm"])}

    def would_vote(self, term: int, last_index: int, last_term: int) -> bool:
        if term <= self.member.term() or self.member.leading() or self.member.heard_from_leader():
            return False
        my_index, my_term = self.member.last_log()
        return last_term > my_term or (last_term == my_term and last_index >= my_index)

    def reply(self, peer: str, body: dict[str, Any]) -> None:
        current = self._round
        if current is not None and body["granted"] and body["term"] == current[0] and peer in self.voters():
            current[1].add(peer)

    def reset(self) -> None:
        """A leader was heard from: any round under way is moot."""
        self._round = None


def check_prevote_request(body: Any) -> dict[str, Any]:
    """A pre-vote request as a member sent it (Any: decoded msgpack), checked."""
    if not (isinstance(body, dict) and set(body) == {"term", "lastIndex", "lastTerm"}
            and all(isinstance(body[k], int) and not isinstance(body[k], bool) and body[k] >= 0 for k in body)):
        raise ValueError("a pre-vote request is {term, lastIndex, lastTerm}")
    return body


def check_prevote_reply(body: Any) -> dict[str, Any]:
    if not (isinstance(body, dict) and set(body) == {"term", "granted"} and isinstance(body["term"], int)
            and not isinstance(body["term"], bool) and isinstance(body["granted"], bool)):
        raise ValueError("a pre-vote reply is {term, granted}")
    return body


def check_transfer_notice(body: Any) -> dict[str, Any]:
    if not (isinstance(body, dict) and set(body) == {"to"} and isinstance(body["to"], str) and len(body["to"]) <= 32):
        raise ValueError("a transfer notice is {to}")
    return body
