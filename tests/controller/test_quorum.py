"""The lease and the pre-vote rules on their own, with a hand-driven clock."""

import random

from namesrv.controller.replication.quorum import DRIFT, STAMPS_KEPT, LeaderLease, PreVote
from tests.fakes import CallableClock


def test_a_lease_needs_a_majority_and_ends_before_anyone_could_vote_again():
    clock = CallableClock(100.0)
    lease = LeaderLease(clock, lambda: ["n1", "n2"], min_timeout=0.4)
    assert not lease.valid()                       # no echo yet: not sure of anything
    stamp = lease.stamp()
    clock.now += 0.05
    lease.echoed("n1", stamp)
    assert lease.valid()
    clock.now = 100.0 + 0.4 * (1 - DRIFT) - 0.001
    assert lease.valid()
    clock.now = 100.0 + 0.4 * (1 - DRIFT) + 0.001
    assert not lease.valid()                       # counted from when the heartbeat left, not when it came back


def test_five_members_need_two_echoes_and_the_older_one_bounds_the_lease():
    clock = CallableClock(100.0)
    lease = LeaderLease(clock, lambda: ["n1", "n2", "n3", "n4"], min_timeout=1.0)
    early = lease.stamp()
    clock.now += 0.5
    late = lease.stamp()
    lease.echoed("n1", late)
    assert not lease.valid()
    lease.echoed("n2", early)
    assert lease.expires() == 100.0 + 1.0 * (1 - DRIFT)
    lease.reset()
    assert not lease.valid()


def test_old_stamps_are_forgotten_and_an_unknown_echo_counts_for_nothing():
    clock = CallableClock(100.0)
    lease = LeaderLease(clock, lambda: ["n1", "n2"], min_timeout=0.4)
    first = lease.stamp()
    for _ in range(STAMPS_KEPT + 10):
        lease.stamp()
    lease.echoed("n1", first)
    lease.echoed("n1", 10 ** 9)
    assert not lease.valid() and len(lease._stamps) <= STAMPS_KEPT


class Member:
    self_id = "n0"

    def __init__(self, term=5, last=(10, 5), leading=False, heard=False):
        self._term, self._last, self._leading, self._heard = term, last, leading, heard

    def term(self):
        return self._term

    def last_log(self):
        return self._last

    def leading(self):
        return self._leading

    def heard_from_leader(self):
        return self._heard

    def transfer_election(self):
        return False


def _prevote(member, sent=None, voters=("n1", "n2"), voting=True):
    return PreVote(member, lambda: list(voters), CallableClock(100.0), random.Random(1), 0.4, 1.4,
                   lambda peer, body: (sent if sent is not None else []).append((peer, body)), voting=lambda: voting)


def test_a_vote_is_promised_only_to_an_up_to_date_log_when_no_leader_was_heard_from():
    assert _prevote(Member()).would_vote(6, 10, 5)
    assert _prevote(Member()).would_vote(6, 3, 6)              # a newer last term beats a longer log
    assert not _prevote(Member()).would_vote(6, 9, 5)          # shorter log, same last term
    assert not _prevote(Member()).would_vote(5, 10, 5)         # not a newer term than ours
    assert not _prevote(Member(heard=True)).would_vote(6, 10, 5)
    assert not _prevote(Member(leading=True)).would_vote(6, 10, 5)


def test_the_gate_opens_once_a_majority_promised_and_a_round_times_out():
    sent = []
    pre = _prevote(Member(), sent)
    assert not pre.gate()
    assert sorted(peer for peer, _ in sent) == ["n1", "n2"] and all(b["term"] == 6 for _, b in sent)
    pre.reply("n1", {"term": 5, "granted": True})              # an answer to another round
    assert not pre.gate()
    pre.reply("n1", {"term": 6, "granted": True})
    assert pre.gate() and pre.elections_allowed == 1
    assert not pre.gate()                                      # one election per round


def test_the_voters_in_force_decide_who_is_asked_and_what_a_majority_is():
    """The configuration changes while the group runs: a learner never stands, the only voter stands at
    once, and a promise from a member that is no longer a voter counts for nothing."""
    assert not _prevote(Member(), voting=False).gate()
    alone = _prevote(Member(), voters=())
    assert alone.gate() and alone.elections_allowed == 1
    voters = ["n1", "n2"]
    sent = []
    pre = PreVote(Member(), lambda: list(voters), CallableClock(100.0), random.Random(1), 0.4, 1.4,
                  lambda peer, body: sent.append(peer))
    assert not pre.gate()
    pre.reply("n2", {"term": 6, "granted": True})
    voters.remove("n2")
    voters.extend(["n3", "n4"])             # n2 left, two joined: three others, so two promises are needed
    assert not pre.gate()
    assert pre.majority == 3


def test_an_echo_from_a_member_that_left_the_voters_stops_counting_and_a_restart_forgets_older_echoes():
    clock = CallableClock(100.0)
    voters = ["n1", "n2"]
    lease = LeaderLease(clock, lambda: list(voters), min_timeout=0.4)
    stamp = lease.stamp()
    lease.echoed("n1", stamp)
    assert lease.valid()
    voters.remove("n1")
    assert not lease.valid()
    voters.append("n1")
    assert lease.valid()
    clock.now += 0.01
    lease.restart()                           # an abandoned leadership transfer
    assert not lease.valid()
    lease.echoed("n1", stamp)                 # sent before the restart: it says nothing any more
    assert not lease.valid()
    lease.echoed("n1", lease.stamp())
    assert lease.valid()
