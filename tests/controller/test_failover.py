"""A master's death: the leader elects from the in-sync set and tells the group, within the same turn."""

from twisted.internet import defer

from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.controller.fakes import FakeConnection
from tests.controller.harness import ControllerHarness, FakeBroker


def group_in_sync(**properties):
    h = ControllerHarness(**properties)
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    assert a1.alter_sync_state_set({1, 2}, 1, master_epoch=1).code == ResponseCode.SUCCESS
    # the first election (asked by broker 1) told broker 1; start counting afresh
    assert [sent[0] for sent in h.notifier.sent] == [a1.address]
    h.notifier.sent.clear()
    h.controller.events.emitted.clear()
    return h, a1, a2


def test_the_master_s_connection_closing_elects_the_in_sync_slave_and_notifies_it():
    h, a1, a2 = group_in_sync()
    a1.die()
    group = h.state.group("broker-a")
    assert (group.master_id, group.master_epoch, group.sync_state_set) == (2, 2, {2})
    # only the live member is told, with Java's header and a SyncStateSet body
    [(address, header, body, epoch)] = h.notifier.sent
    assert address == a2.address and epoch == 2
    assert header == {"masterAddress": a2.address, "masterEpoch": 2, "syncStateSetEpoch": 3, "masterBrokerId": 2}
    assert loads(body) == {"syncStateSet": [2], "syncStateSetEpoch": 3}
    events = [name for name, _ in h.controller.events.emitted]
    assert events == ["controller_master_inactive", "controller_master_elected"]
    elected = dict(h.controller.events.emitted[1][1])
    assert elected["masterBrokerId"] == 2 and elected["trigger"] == "controller" and elected["masterlessMillis"] == 0
    # the old master, restarted, rejoins as a slave: its register answer names the new master
    a1.connection = type(a1.connection)("127.0.0.1:50001")
    a1.beat()
    answer = a1.register()
    assert answer.ext["masterBrokerId"] == "2" and answer.ext["masterEpoch"] == "2"
    assert a1.elect().code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST


def test_a_slave_outside_the_in_sync_set_is_not_elected_unless_unclean_elections_are_allowed():
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    h.notifier.sent.clear()
    a1.die()
    group = h.state.group("broker-a")
    assert group.master_id is None and group.master_epoch == 2 and group.sync_state_set == {1}
    assert h.notifier.sent == []
    assert h.controller.elections["no_master_elected"] == 1
    # asked by the slave itself: still refused
    assert a2.elect().code == ResponseCode.CONTROLLER_ELECT_MASTER_FAILED
    h.controller.config.update({"enableElectUncleanMaster": "true"})
    answer = a2.elect()
    assert answer.code == ResponseCode.SUCCESS and answer.ext["masterBrokerId"] == "2"


def test_the_freshest_in_sync_replica_wins():
    h = ControllerHarness()
    brokers = [FakeBroker(h, port=30911 + 10 * i) for i in range(3)]
    brokers[0].start(), brokers[0].elect()
    for b in brokers[1:]:
        b.start()
    assert brokers[0].alter_sync_state_set({1, 2, 3}, 1, master_epoch=1).code == ResponseCode.SUCCESS
    brokers[1].beat(epoch=1, max_offset=100)
    brokers[2].beat(epoch=1, max_offset=250)
    brokers[0].die()
    assert h.state.group("broker-a").master_id == 3


def test_a_silent_master_expires_on_the_scan_and_a_follower_leaves_it_to_the_leader():
    h, a1, a2 = group_in_sync()
    h.clock.advance(8)
    a2.beat()                                     # the slave keeps beating, the master stops
    h.clock.advance(3)
    assert h.controller.heartbeats.scan() == 1    # the master's 10 s are over
    assert a1.connection.closed
    assert h.state.group("broker-a").master_id == 2

    # on a follower nothing is elected: the leader does it
    h2, b1, b2 = group_in_sync()
    h2.controller.replicated.set_leading(False)
    b1.die()
    assert h2.state.group("broker-a").master_id == 1 and h2.notifier.sent == []


def test_a_new_leader_elects_at_once_for_a_group_whose_master_died_before_it_led():
    h, a1, a2 = group_in_sync()
    h.controller.replicated.set_leading(False)
    h.clock.advance(10)                           # this controller has been up longer than the grace
    a2.beat()
    a1.die()                                      # heard while a follower: nothing done
    assert h.state.group("broker-a").master_id == 1
    h.controller.replicated.set_leading(True)
    h.clock.advance(0)
    assert h.state.group("broker-a").master_id == 2
    assert len(h.notifier.sent) == 1


def test_a_fresh_leader_waits_for_beats_before_judging_masters():
    h, a1, a2 = group_in_sync()
    h.controller.replicated.set_leading(False)
    a1.die()                                      # at t=0: the grace (5 s) has not passed
    h.controller.replicated.set_leading(True)
    h.clock.advance(1)
    assert h.state.group("broker-a").master_id == 1
    a2.beat()
    h.clock.advance(4)
    assert h.state.group("broker-a").master_id == 2


def test_the_periodic_scan_catches_a_master_missed_by_everything_else():
    h, a1, a2 = group_in_sync()
    del h.controller.heartbeats.table[("DefaultCluster", "broker-a", 1)]   # gone without a close
    assert h.controller.scan_inactive_masters() == ["broker-a"]
    assert h.state.group("broker-a").master_id == 2
    assert h.controller.scan_inactive_masters() == []


def test_requests_are_decided_one_at_a_time():
    """A second request waits for the first one's events to be committed, then sees them."""
    h = ControllerHarness()
    a1 = FakeBroker(h, port=30911)
    hold = h.controller.replicated.hold = defer.Deferred()
    first = h.registry.dispatch(make_request(RequestCode.CONTROLLER_APPLY_BROKER_ID, ext={
        "clusterName": "c", "brokerName": "broker-a", "appliedBrokerId": "1",
        "registerCheckCode": a1.address + ";1"}), FakeConnection())
    second = h.registry.dispatch(make_request(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, ext={
        "clusterName": "c", "brokerName": "broker-a"}), FakeConnection())
    answers = []
    first.addCallback(lambda answer: answers.append(("first", answer.code)))
    second.addCallback(lambda answer: answers.append(("second", answer.ext["nextBrokerId"])))
    assert answers == []                          # the second waits behind the uncommitted first
    hold.callback(None)
    assert sorted(answers) == [("first", 0), ("second", "2")]   # decided after the first was applied


def test_a_silent_master_is_replaced_a_tenth_of_a_second_after_its_timeout_without_waiting_for_a_scan():
    from namesrv.controller.heartbeats import EXPIRY_GRANULARITY
    h, a1, a2 = group_in_sync()
    h.controller.heartbeats.reactor = h.clock       # the service gives its table the reactor's timer
    a1.beat(timeout=3000)
    a2.beat(timeout=3000)
    for _ in range(20):                             # the slave goes on beating every 0.5 s
        h.clock.advance(0.5)
        a2.beat(timeout=3000)
        if h.state.group("broker-a").master_id == 2:
            break
    elapsed = h.clock.seconds()
    assert h.state.group("broker-a").master_id == 2
    assert 3.0 < elapsed - 0 <= 3.0 + EXPIRY_GRANULARITY + 0.5
    assert [sent[0] for sent in h.notifier.sent] == [a2.address]


def test_with_is_process_read_event_a_read_commits_an_empty_entry_first():
    from twisted.internet import defer as d
    h, a1, a2 = group_in_sync(isProcessReadEvent="true")
    log = h.controller.replicated
    log.proposed.clear()
    held = log.hold = d.Deferred()                   # the barrier's commit is slow
    answered = []
    h.controller.run(lambda: "read-result", write=False).addCallback(answered.append)
    assert answered == [] and log.proposed == [[]]
    held.callback(None)
    assert answered == ["read-result"]
    log.leading = False                              # a deposed leader's read barrier fails: not leader
    h.controller.run(lambda: "stale", write=False).addCallback(answered.append)
    assert answered[-1].code == ResponseCode.CONTROLLER_NOT_LEADER
