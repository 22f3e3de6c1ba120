"""The routes of the name server follow the elections its controller member applies, when that member is
sure its state is current (namesrv/controller/routing.py)."""

from twisted.internet.task import Clock

from namesrv.controller.routing import RETRY_EVERY, RETRY_FOR, CommittedMasterRouting
from namesrv.controller.state import ReplicaState
from tests.fakes import FakeConnection, RecordingEventLog
from tests.routes.helpers import CLUSTER, addrs_of, new_routes, register

OLD, NEW = "127.0.0.1:10911", "127.0.0.1:10921"


class Member:
    """What the routing asks of the replicated log."""

    def __init__(self, is_leader=True, leader_id=None):
        self.is_leader = is_leader
        self.leader_id = leader_id


def setup(member):
    clock, events, state = Clock(), RecordingEventLog(), ReplicaState()
    routes = new_routes(clock)
    register(routes, "T", addr=OLD, broker_id=0, state=1, conn=FakeConnection())
    register(routes, "T", addr=NEW, broker_id=2, state=1, conn=FakeConnection())
    for broker_id, address in ((1, OLD), (2, NEW)):
        state.apply({"type": "apply_broker_id", "clusterName": CLUSTER, "brokerName": "broker-a",
                     "brokerId": broker_id, "brokerAddress": address, "registerCheckCode": address + ";1"})
    state.apply({"type": "elect_master", "brokerName": "broker-a", "newMasterId": 1})     # epoch 1
    routing = CommittedMasterRouting(state, member, routes, events, clock)
    return routing, routes, state, clock, events


def elect(state, broker_id):
    state.apply({"type": "elect_master", "brokerName": "broker-a", "newMasterId": broker_id})


def test_a_leader_routes_the_master_it_applies_after_the_batch():
    routing, routes, state, clock, events = setup(Member(is_leader=True))
    elect(state, 2)                                     # epoch 2: NEW
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}   # not inside the log's apply
    clock.advance(0)
    assert addrs_of(routes, "T") == {0: NEW}
    assert routing.routed == 1
    [(name, fields)] = [e for e in events.emitted if e[0] == "route_master_changed"]
    assert dict(fields) == {"cluster": CLUSTER, "brokerName": "broker-a", "masterAddress": NEW, "masterBrokerId": 2,
                            "masterEpoch": 2, "trigger": "controller"}


def test_a_follower_that_heard_its_leader_routes_too_and_one_that_did_not_waits():
    routing, routes, state, clock, _ = setup(Member(is_leader=False, leader_id="n1"))
    elect(state, 2)
    clock.advance(0)
    assert addrs_of(routes, "T") == {0: NEW}
    member = Member(is_leader=False, leader_id=None)      # cut off, or replaying its log
    routing, routes, state, clock, _ = setup(member)
    elect(state, 2)
    clock.advance(0)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW} and routing.routed == 0
    clock.advance(RETRY_FOR / 2)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}
    member.leader_id = "n1"                                # it hears the leader: the state it holds now counts
    clock.advance(RETRY_EVERY)
    assert addrs_of(routes, "T") == {0: NEW} and routing.routed == 1


def test_a_new_leader_routes_the_election_it_applied_just_before_it_serves():
    member = Member(is_leader=False, leader_id=None)
    routing, routes, state, clock, _ = setup(member)
    elect(state, 2)
    clock.advance(0)
    member.is_leader = True
    clock.advance(RETRY_EVERY)
    assert addrs_of(routes, "T") == {0: NEW}


def test_a_member_never_sure_gives_up_after_a_while_and_routes_later_elections_afresh():
    member = Member(is_leader=False, leader_id=None)
    routing, routes, state, clock, _ = setup(member)
    elect(state, 2)
    clock.pump([RETRY_EVERY] * int(RETRY_FOR / RETRY_EVERY + 2))
    assert not clock.getDelayedCalls() and routing.routed == 0
    member.leader_id = "n1"
    clock.advance(60)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}        # nothing is asked again without a new election
    elect(state, 1)                                          # epoch 3: OLD, already brokerId 0 here
    elect(state, 2)                                          # epoch 4: NEW
    clock.advance(0)
    assert addrs_of(routes, "T") == {0: NEW} and routing.routed == 1


def test_the_last_election_of_a_batch_counts():
    routing, routes, state, clock, _ = setup(Member())
    elect(state, 2)          # epoch 2: NEW ...
    elect(state, 1)          # ... epoch 3: OLD again, in the same batch of applied entries
    clock.advance(0)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW} and routing.routed == 0


def test_an_election_with_no_master_changes_no_route():
    routing, routes, state, clock, _ = setup(Member())
    state.apply({"type": "elect_master", "brokerName": "broker-a", "newMasterId": None})
    clock.advance(0)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}


def test_stopping_drops_a_pass_not_run_yet():
    routing, routes, state, clock, _ = setup(Member())
    elect(state, 2)
    routing.stop()
    clock.advance(1)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}
    routing, routes, state, clock, _ = setup(Member(is_leader=False))
    elect(state, 2)
    clock.advance(1)                                         # asking again
    routing.stop()
    assert not clock.getDelayedCalls()
