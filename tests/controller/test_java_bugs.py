"""RocketMQ's controller bug reports, each tried against ours (issue 56, item 5).

Each test names the report, says what Java's controller did and what ours does, and fails if ours did what
Java's did. The ones that need several controllers run on the simulated group (raftsim.py: the real Raft logs,
controllers, heartbeat tables and liveness relay on one clock, seeded); the ones about one controller's
decisions run on the harness. Against Java 5.3.3 itself: ``python -m bench controller_java_bugs`` (the ones
one controller shows) and the fault lab's schedules (bench/results/controller-java-bugs.md).
"""

import contextlib
import json

import pytest
from twisted.internet import defer

from namesrv.controller import decisions, election
from namesrv.controller.liveinfo import BrokerLiveInfo
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.controller.harness import ControllerHarness, FakeBroker
from tests.controller.raftsim import sim_groups
from tests.controller.simcontrollers import CLUSTER, SimBroker, controllers_on, group_events
from tests.fakes import FakeConnection, result_of


@pytest.fixture
def sim(tmp_path):
    """Controllers stopped first, then the groups closed, the last made first (raftsim.sim_groups)."""
    with sim_groups(tmp_path) as new_group, contextlib.ExitStack() as running:
        def make(relay=True, seed=7, **properties):
            group = new_group(seed=seed)
            leader = group.leader()
            box = group.propose(leader, group_events(1, 2))
            group.run_until(lambda: box, limit=10)
            assert box[0][0] == "ok"
            controllers = controllers_on(group, relay, **properties)
            for controller in controllers.values():
                running.callback(controller.stop)
            return group, controllers, leader
        yield make


def master_of(controllers, member):
    group = controllers[member].state.group("broker-a")
    return group.master_id, group.master_epoch


# -- #10812: brokers heartbeat only to follower controllers --------------------------------------------------------
def test_10812_a_master_heard_only_by_followers_stays_master(sim):
    """Java: each controller keeps the beats it hears, and only the leader's count. A broker whose beats reach only
    followers (#10812: the leader dropped from the addresses it beats to) is dead to the leader: a healthy master is
    replaced at its heartbeat timeout. Ours: the leader asks its followers about brokers it has not heard for 2 s
    (relay.py), and they answer with what they hear: the master stays master."""
    group, controllers, leader = sim()
    followers = [m for m in group.ids if m != leader]
    master = SimBroker(controllers, group.clock, 1, followers)
    slave = SimBroker(controllers, group.clock, 2, group.ids)
    group.run(40)
    assert master_of(controllers, leader) == (1, 1)
    assert controllers[leader].heartbeats.is_alive(CLUSTER, "broker-a", 1)
    assert controllers[leader].controller.elections["new_master_elected"] == 0
    assert controllers[leader].relay.asked > 0 and controllers[leader].relay.relayed > 0
    master.stop(), slave.stop()


def test_10812_without_the_relay_the_leader_replaces_a_healthy_master_as_java_does(sim):
    """The same run with the relay off: the scenario can fail, and fails the way Java's controller does."""
    group, controllers, leader = sim(relay=False)
    followers = [m for m in group.ids if m != leader]
    master = SimBroker(controllers, group.clock, 1, followers)
    slave = SimBroker(controllers, group.clock, 2, group.ids)
    group.run(40)
    assert master_of(controllers, leader) == (2, 2)
    master.stop(), slave.stop()


def test_10812_a_slave_heard_only_by_followers_can_join_the_in_sync_set(sim):
    """Java: the leader refuses to add a replica it does not hear (CONTROLLER_BROKER_NOT_ALIVE): #9845's
    "one broker can never join the SyncStateSet again". Ours: a follower's relay keeps it alive."""
    group, controllers, leader = sim()
    followers = [m for m in group.ids if m != leader]
    master = SimBroker(controllers, group.clock, 1, group.ids)
    slave = SimBroker(controllers, group.clock, 2, followers)
    box = group.propose(leader, [{"type": "alter_sync_state_set", "brokerName": "broker-a", "syncStateSet": [1]}])
    group.run_until(lambda: box, limit=10)
    group.run(5)
    state = controllers[leader].state
    group_a = state.group("broker-a")
    result = decisions.alter_sync_state_set(state, controllers[leader].controller.liveness, "broker-a", 1,
                                            group_a.master_epoch, {1, 2}, group_a.sync_state_set_epoch)
    assert result.code == ResponseCode.SUCCESS, result.remark
    master.stop(), slave.stop()


def test_10812_a_master_heard_only_by_followers_that_dies_is_replaced_within_a_relay_round(sim):
    """The relay must not slow a real failover down: a follower that loses the master's connection says so at the
    leader's next question ("gone"), and the leader elects at once, not at the heartbeat timeout."""
    group, controllers, leader = sim()
    followers = [m for m in group.ids if m != leader]
    master = SimBroker(controllers, group.clock, 1, followers)
    slave = SimBroker(controllers, group.clock, 2, group.ids)
    group.run(10)
    died = group.clock.seconds()
    master.die()
    group.run_until(lambda: master_of(controllers, leader) == (2, 2), limit=5)
    assert group.clock.seconds() - died < 1.5          # a relay round (0.5 s) and a commit, not a 10 s timeout
    slave.stop()


def test_10812_a_slave_heard_only_by_followers_is_elected_and_told_by_them(sim):
    """The master dies while its slave's beats reach only followers. Java's leader does not hear the slave: no
    master until the cut heals. Ours elects it (the relay), and the followers that apply the election tell it
    (the leader's own notification cannot reach it): it is master at once, not at the heal."""
    group, controllers, leader = sim()
    followers = [m for m in group.ids if m != leader]
    master = SimBroker(controllers, group.clock, 1, group.ids)
    slave = SimBroker(controllers, group.clock, 2, followers)
    group.run(10)
    master.die()
    group.run_until(lambda: all(master_of(controllers, m) == (2, 2) for m in group.ids), limit=5)
    group.run(0.5)
    for member in followers:
        told = [address for address, header, _, _ in controllers[member].notifier.sent if header["masterEpoch"] == 2]
        assert told == [slave.address], (member, told)
    slave.stop()


def test_a_member_not_sure_of_its_state_tells_no_broker():
    """A follower that has not heard a leader lately (replaying its log at a restart, or cut off) applies
    elections that may be long past: it tells nobody (a broker would ignore an old epoch, but it is noise)."""
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    log = h.controller.replicated
    told = len(h.notifier.sent)
    log.leading = False                      # a follower; MemoryLog's leader_id is then None: not sure
    log.state.apply({"type": "elect_master", "brokerName": "broker-a", "newMasterId": 2})
    h.clock.advance(0)
    assert len(h.notifier.sent) == told


def test_a_master_killed_while_every_controller_hears_it_is_replaced_at_once_relay_or_not(sim):
    """What the fault lab measures as 0.0-0.1 s: the leader's own connection closing is acted on at once."""
    group, controllers, leader = sim()
    master = SimBroker(controllers, group.clock, 1, group.ids)
    slave = SimBroker(controllers, group.clock, 2, group.ids)
    group.run(10)
    died = group.clock.seconds()
    master.die()
    group.run_until(lambda: master_of(controllers, leader) == (2, 2), limit=5)
    assert group.clock.seconds() - died < 0.2
    slave.stop()


def test_relayed_beats_from_before_a_close_the_leader_saw_do_not_revive_the_broker():
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    heartbeats = h.controller.heartbeats
    key = ("DefaultCluster", "broker-a", 1)
    h.clock.advance(3)
    a1.die()                                                   # seen here: dead, a new master elected
    heartbeats.relayed_beat("n1", key, 2500, 10000, 1, 0, -1, 0)     # heard by n1 before that close
    assert not heartbeats.is_alive(*key)
    h.clock.advance(0.5)
    heartbeats.relayed_beat("n1", key, 200, 10000, 1, 0, -1, 0)      # heard by n1 after it: alive again
    assert heartbeats.is_alive(*key)


# -- #10416 (and #9717): the inactive-broker scan skipped forever by a reversed time check --------------------------
def test_10416_a_hung_master_is_replaced_at_its_timeout_however_long_the_controllers_ran(sim):
    """Java 5.3.3's JRaft controller (RaftBrokerHeartBeatManager.scanNotActiveBroker) scans only while
    ``firstReceivedHeartbeatTime + jRaftScanWaitTimeoutMs`` is *not* yet past: from a second after the first
    beat on, never again. A master that stops beating but keeps its connection (an OOM, a GC pause) is never
    replaced. Ours keeps a deadline per broker and wakes at it, however long it has run."""
    group, controllers, leader = sim()
    master = SimBroker(controllers, group.clock, 1, group.ids)
    slave = SimBroker(controllers, group.clock, 2, group.ids)
    group.run(3600, step=0.25)                          # an hour of beats (checked every quarter second)
    hung = group.clock.seconds()
    master.hang()
    group.run_until(lambda: master_of(controllers, leader) == (2, 2), limit=15)
    assert 10.0 <= group.clock.seconds() - hung <= 11.0  # its 10 s timeout, then the next beat's round
    slave.stop()


# -- #10875 and #8380: the re-election scan's predicate inverted --------------------------------------------------
def test_10875_and_8380_the_scan_finds_a_dead_master_and_only_that():
    """Java's RaftReplicasInfoManager.checkNotActiveBroker passes ``!isBrokerActive`` as the predicate that
    scanNeedReelectBrokerSets already negates: a group whose master died while a slave lives is not found
    (#10875), and a group whose slave died while its master lives is (#8380: unexpected elections). Ours asks
    one question, "alive?", the right way round."""
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    liveness = h.controller.liveness
    h.controller.replicated.leading = False              # a follower: nothing elects while the cases are set up
    a2.die()                                             # the slave gone, the master alive
    assert decisions.groups_needing_election(h.state, liveness) == []
    a2.connection = FakeConnection("127.0.0.1:50001")
    a2.beat()
    a1.die()                                             # the master gone, the slave alive
    assert decisions.groups_needing_election(h.state, liveness) == ["broker-a"]


def test_8380_a_dead_slave_never_causes_an_election(sim):
    group, controllers, leader = sim()
    master = SimBroker(controllers, group.clock, 1, group.ids)
    slave = SimBroker(controllers, group.clock, 2, group.ids)
    group.run(5)
    slave.die()
    group.run(60)
    assert master_of(controllers, leader) == (1, 1)
    assert controllers[leader].controller.elections == {"new_master_elected": 0, "keep_current_master": 0,
                                                        "no_master_elected": 0}
    master.stop()


# -- #10578: the election comparator overflows on offsets more than 2 GiB apart -----------------------------------
@pytest.mark.parametrize("behind, ahead", [(0, 2 ** 31 + 1), (5, 2 ** 32 + 3), (2 ** 40, 2 ** 40 + 2 ** 31)])
def test_10578_the_replica_with_the_larger_offset_is_elected_however_far_apart(behind, ahead):
    """Java 5.3.3's DefaultElectPolicy compares ``(int) (o2.getMaxOffset() - o1.getMaxOffset())``: two replicas
    of one epoch more than 2^31 bytes apart can sort the wrong way, and the one behind is elected (its missing
    messages lost). Ours compares the offsets themselves."""
    infos = {2: BrokerLiveInfo("c", "b", 2, "a2", 0, 10000, None, 3, behind),
             3: BrokerLiveInfo("c", "b", 3, "a3", 0, 10000, None, 3, ahead)}
    assert election.elect({2, 3}, None, 1, None, lambda b: b in infos, infos.get) == 3


# -- #11045: a stale channel-close event evicts a re-registered broker ---------------------------------------------
def test_11045_the_old_connection_s_late_close_does_not_evict_a_master_that_moved():
    """Java 5.3.3's DefaultBrokerHeartbeatManager keeps the broker's first channel: when that one's close arrives
    after the broker reconnected (a half-open connection), the live master is evicted and another elected. Ours
    binds the entry to the connection the broker beats on now."""
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    old, a1.connection = a1.connection, FakeConnection("127.0.0.1:50999")
    a1.beat()
    h.controller.heartbeats.connection_closed(old)
    assert h.controller.heartbeats.is_alive("DefaultCluster", "broker-a", 1)
    assert (h.state.group("broker-a").master_id, h.state.group("broker-a").master_epoch) == (1, 1)


# -- #7219 and #6342: races on the in-sync set ------------------------------------------------------------------------
def test_7219_6342_two_alters_of_one_epoch_commit_once_and_the_second_is_fenced():
    """The brokers' side of #7219 (a shrink and an expand racing on the master) and #6342 (a local set that
    differs from the controller's under the same epoch) meet the controller as two alter requests made from one
    epoch. One is committed and gets the next epoch; the other is fenced (CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH),
    so no two different sets are ever answered under one epoch."""
    h = ControllerHarness()
    a1, a2, a3 = FakeBroker(h, port=30911), FakeBroker(h, port=30921), FakeBroker(h, port=30931)
    a1.start(), a1.elect(), a2.start(), a3.start()
    hold = h.controller.replicated.hold = defer.Deferred()
    first = h.registry.dispatch(*_alter(a1, {1, 2}, 1))
    second = h.registry.dispatch(*_alter(a1, {1, 3}, 1))   # decided after the first commits: fenced
    hold.callback(None)
    answers = [_result(first), _result(second)]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS, ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH]
    assert h.state.group("broker-a").sync_state_set == {1, 2}
    assert h.state.group("broker-a").sync_state_set_epoch == 2


def test_7219_6342_an_alter_from_before_an_election_is_fenced_by_the_master_epoch():
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    assert a1.alter_sync_state_set({1, 2}, 1, master_epoch=1).code == ResponseCode.SUCCESS
    a1.die()                                             # 2 elected, master epoch 2
    a1.connection = FakeConnection("127.0.0.1:50998")
    a1.beat()
    late = a1.alter_sync_state_set({1}, 2, master_id=1, master_epoch=1)
    assert late.code == ResponseCode.CONTROLLER_INVALID_MASTER
    late = a1.alter_sync_state_set({1, 2}, 3, master_id=2, master_epoch=1)
    assert late.code == ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH


@pytest.mark.parametrize("seed", range(5))
def test_7219_6342_no_epoch_ever_names_two_different_sets_under_leader_changes(sim, seed):
    """Alters from the master at every controller, while the leader changes: every member applies the same
    (epoch, set) pairs, and no epoch carries two sets."""
    group, controllers, leader = sim(seed=seed)
    seen = {}
    for member, controller in controllers.items():
        controller.state.listeners.append(
            lambda event, g, m=member: g is not None and seen.setdefault(m, []).append(
                (g.sync_state_set_epoch, tuple(sorted(g.sync_state_set)))))
    brokers = [SimBroker(controllers, group.clock, b, group.ids) for b in (1, 2)]
    for round_ in range(12):
        for member, controller in controllers.items():
            g = controller.state.group("broker-a")
            wanted = {1, 2} if round_ % 2 else {1}
            controller.controller.run(lambda c=controller, g=g, w=wanted: decisions.alter_sync_state_set(
                c.state, c.controller.liveness, "broker-a", g.master_id, g.master_epoch, w, g.sync_state_set_epoch))
        group.run(0.3)
        if round_ == 5:
            group.net.isolate(group.leader(), group.ids)
            group.run(3)
            group.net.heal()
    group.run(5)
    assert min(len({epoch for epoch, _ in pairs}) for pairs in seen.values()) >= 4, "too few alters committed"
    for pairs in seen.values():
        by_epoch = {}
        for epoch, members in pairs:
            assert by_epoch.setdefault(epoch, members) == members, "epoch %d names two sets (seed %d)" % (
                epoch, seed)
    for broker in brokers:
        broker.stop()


def _alter(broker, members, epoch):
    body = json.dumps({"syncStateSet": sorted(members), "syncStateSetEpoch": epoch}).encode()
    request = make_request(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, ext={
        "brokerName": broker.name, "masterBrokerId": broker.broker_id, "masterEpoch": 1}, body=body)
    return decode_frame(encode_frame(request)[4:]), broker.connection


def _result(answer):
    return result_of(answer)
