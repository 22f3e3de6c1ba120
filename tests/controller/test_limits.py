"""What a client may make the controller keep (issue 54, findings 4 and 5): every refusal is an answer and a count.

Java's controller keeps every heartbeat key and every broker name it is sent, for as long as the sender says
(heartbeats) or for ever (apply-broker-id, in the replicated and durable state of every member).
"""

import pytest

from namesrv.controller.metrics import controller_families
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.controller.harness import ControllerHarness, FakeBroker
from tests.fakes import FakeConnection

BIG = 900 * 1024


def beat(h, name="broker-a", cluster="DefaultCluster", address="127.0.0.1:30911", broker_id=1, timeout=10000,
         connection=None):
    return h.call(RequestCode.BROKER_HEARTBEAT, {"clusterName": cluster, "brokerAddr": address, "brokerName": name,
                                                 "brokerId": broker_id, "heartbeatTimeoutMills": timeout},
                  connection=connection)


def apply_id(h, name, cluster="DefaultCluster", broker_id=1, check_code="127.0.0.1:30911;1"):
    return h.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, {"clusterName": cluster, "brokerName": name,
                                                           "appliedBrokerId": broker_id,
                                                           "registerCheckCode": check_code})


def refused(h):
    return h.controller.status()["refused"]


def test_600_heartbeats_with_900_kib_keys_keep_nothing():
    h = ControllerHarness()
    connection = FakeConnection()
    for i in range(600):
        name = "%d-%s" % (i, "x" * BIG)
        answer = beat(h, name=name, connection=connection)
        assert answer.code == ResponseCode.CONTROLLER_INVALID_REQUEST
        assert answer.remark.startswith("brokerName is %d characters long; at most 100" % len(name))
    assert h.controller.heartbeats.table == {} and len(h.controller.heartbeats.deadlines) == 0
    assert refused(h) == {"bad_name": 600}
    families = {f.name: f for f in controller_families(h.controller.status())}
    assert [(s.labels, s.value) for s in families["rocketmq_namesrv_controller_refused_requests"].samples
            if s.name.endswith("_total")] == [({"reason": "bad_name"}, 600)]


@pytest.mark.parametrize("name, remark", [
    ("broker a", "brokerName contains characters a topic name may not"),
    ("broker/../a", "brokerName contains characters a topic name may not"),
    ("b" * 101, "brokerName is 101 characters long; at most 100"),
])
def test_a_name_no_java_broker_could_have_is_refused(name, remark):
    h = ControllerHarness()
    answer = beat(h, name=name)
    assert answer.code == ResponseCode.CONTROLLER_INVALID_REQUEST and answer.remark.startswith(remark)
    assert beat(h, name="b" * 100).code == ResponseCode.SUCCESS                # the longest allowed
    assert beat(h, name="%RETRY%|a-b_c", broker_id=2).code == ResponseCode.SUCCESS  # Java's characters
    assert beat(h, cluster="c" * 128).remark.startswith("clusterName is 128 characters long; at most 127")


def test_an_address_longer_than_the_field_bound_is_refused_even_for_a_known_key():
    h = ControllerHarness()
    assert beat(h).code == ResponseCode.SUCCESS
    answer = beat(h, address="1" * 257)
    assert answer.code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert answer.remark == "brokerAddr is 257 characters long; at most 256 (controllerMaxFieldLength)"
    assert h.controller.heartbeats.table[("DefaultCluster", "broker-a", 1)].address == "127.0.0.1:30911"


def test_the_heartbeat_table_and_each_connection_hold_a_bounded_number_of_brokers():
    h = ControllerHarness(controllerHeartbeatMaxBrokers=5, controllerHeartbeatMaxBrokersPerConnection=3)
    first, second = FakeConnection("10.0.0.1:1"), FakeConnection("10.0.0.2:1")
    assert [beat(h, broker_id=i, connection=first).code for i in range(1, 5)] == [0, 0, 0,
                                                                                ResponseCode.CONTROLLER_INVALID_REQUEST]
    assert beat(h, broker_id=4, connection=first).remark == \
        "this connection already beats for 3 brokers (controllerHeartbeatMaxBrokersPerConnection)"
    assert beat(h, broker_id=1, connection=first).code == ResponseCode.SUCCESS       # a known key beats on
    assert [beat(h, broker_id=i, connection=second).code for i in (10, 11, 12)] == [
        0, 0, ResponseCode.CONTROLLER_INVALID_REQUEST]
    assert beat(h, broker_id=12, connection=second).remark == \
        "this controller already hears 5 brokers (controllerHeartbeatMaxBrokers)"
    assert len(h.controller.heartbeats.table) == 5
    assert refused(h) == {"heartbeat_connection_full": 2, "heartbeat_table_full": 2}


def test_a_closed_connection_gives_back_its_entries_and_their_queued_deadlines():
    h = ControllerHarness()
    heartbeats = h.controller.heartbeats
    flood, broker = FakeConnection("10.0.0.9:1"), FakeConnection("10.0.0.1:1")
    beat(h, broker_id=1, connection=broker)
    for i in range(2, 62):
        assert beat(h, name="flood-%d" % i, connection=flood, timeout=120000).code == ResponseCode.SUCCESS
    assert len(heartbeats.table) == 61
    heartbeats.connection_closed(flood)
    assert list(heartbeats.table) == [("DefaultCluster", "broker-a", 1)]
    assert heartbeats.by_connection == {broker: {("DefaultCluster", "broker-a", 1)}}
    for i in range(70):         # enough churn for the queue to be rebuilt from what is left
        beat(h, name="churn-%d" % i, connection=flood)
        heartbeats.connection_closed(flood)
    assert len(heartbeats.deadlines) <= 2 * len(heartbeats.table) + 64


@pytest.mark.parametrize("asked, kept", [(None, 120000), (1, 1000), (10000, 10000), (86400000, 120000)])
def test_the_sender_s_timeout_is_clamped_to_the_documented_range(asked, kept):
    h = ControllerHarness()
    ext = {"clusterName": "DefaultCluster", "brokerAddr": "127.0.0.1:30911", "brokerName": "broker-a", "brokerId": 1}
    if asked is not None:
        ext["heartbeatTimeoutMills"] = asked
    assert h.call(RequestCode.BROKER_HEARTBEAT, ext).code == ResponseCode.SUCCESS
    assert h.controller.heartbeats.table[("DefaultCluster", "broker-a", 1)].timeout_millis == kept


def test_a_beat_on_a_new_connection_moves_the_entry_so_the_old_one_s_late_close_changes_nothing():
    """apache/rocketmq#11045: Java keeps the entry bound to the broker's first connection; when that one's close
    arrives late (a half-open connection the broker already replaced), a live master is evicted and a new one
    elected. Here the entry follows the connection the broker beats on now."""
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    a1.start(), a1.elect(), a2.start()
    told = len(h.notifier.sent)
    old = a1.connection
    a1.connection = FakeConnection("127.0.0.1:50999")          # the broker reconnected
    a1.beat()
    h.controller.heartbeats.connection_closed(old)             # the old connection's close, late
    assert h.controller.heartbeats.is_alive("DefaultCluster", "broker-a", 1)
    assert h.state.group("broker-a").master_id == 1 and h.state.group("broker-a").master_epoch == 1
    assert len(h.notifier.sent) == told and h.controller.elections["new_master_elected"] == 1


def test_200_apply_id_requests_with_100_kib_names_store_nothing():
    h = ControllerHarness()
    for i in range(200):
        answer = apply_id(h, "%d-%s" % (i, "n" * 100 * 1024))
        assert answer.code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert h.state.groups == {} and h.controller.replicated.proposed == []
    assert refused(h) == {"bad_name": 200}


def test_apply_id_bounds_the_groups_their_ids_and_the_check_code():
    h = ControllerHarness(controllerMaxBrokerGroups=2, controllerMaxBrokersPerGroup=2)
    assert apply_id(h, "g1").code == ResponseCode.SUCCESS
    assert apply_id(h, "g2").code == ResponseCode.SUCCESS
    third = apply_id(h, "g3")
    assert (third.code, third.remark) == (ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                                          "the controllers already keep 2 broker groups (controllerMaxBrokerGroups): "
                                          "g3 is not added")
    assert apply_id(h, "g1", broker_id=2, check_code="127.0.0.1:30921;1").code == ResponseCode.SUCCESS
    full = apply_id(h, "g1", broker_id=3, check_code="127.0.0.1:30931;1")
    assert full.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    assert full.remark.startswith("broker-set g1 already has 2 broker ids (controllerMaxBrokersPerGroup)")
    assert apply_id(h, "g1", broker_id=2, check_code="127.0.0.1:30921;1").code == ResponseCode.SUCCESS  # its own id
    long_code = apply_id(h, "g2", broker_id=2, check_code="1" * 300)
    assert long_code.code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert long_code.remark == "registerCheckCode is 300 characters long; at most 256 (controllerMaxFieldLength)"
    assert apply_id(h, "g4", cluster="bad cluster").remark.startswith("clusterName contains characters")
    assert sorted(h.state.groups) == ["g1", "g2"] and sorted(h.state.group("g1").brokers) == [1, 2]
    assert refused(h) == {"too_many_groups": 1, "too_many_brokers_in_group": 1, "field_too_long": 1, "bad_name": 1}


def test_register_refuses_an_address_longer_than_the_field_bound():
    h = ControllerHarness()
    a1 = FakeBroker(h)
    a1.start()
    a1.address = "9" * 1000
    answer = a1.register()
    assert answer.code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert h.state.group("broker-a").address_of(1) == "127.0.0.1:30911"


def test_a_group_that_never_came_alive_is_forgotten_by_a_replicated_event():
    h = ControllerHarness(controllerUnaliveGroupExpireMillis=60000)
    controller, clock = h.controller, h.clock
    apply_id(h, "ghost")                                  # an id applied, and nothing more
    live = FakeBroker(h, name="broker-a")
    live.start(), live.elect()                            # a real group: elected, beating
    waiting = FakeBroker(h, name="broker-w", port=30931)
    waiting.start()                                       # applied and beating, not elected yet
    dead = FakeBroker(h, name="broker-d", port=30941)
    dead.start(), dead.elect(), dead.die()                # a group whose master was elected: kept
    assert controller.expire_unalive_groups() == []       # the clock starts
    clock.advance(59)
    assert controller.expire_unalive_groups() == []
    clock.advance(2)
    assert controller.scan_inactive_masters() == [] and controller.expired_groups == 1
    assert sorted(h.state.groups) == ["broker-a", "broker-d", "broker-w"]
    assert controller.replicated.proposed[-1] == [{"type": "clean_broker_data", "brokerName": "ghost",
                                                   "brokerIds": None}]
    assert [e["brokerName"] for e in controller.events.named("controller_group_expired")] == ["ghost"]


def test_only_the_leader_expires_groups_and_a_new_leader_starts_the_clock_again():
    h = ControllerHarness(controllerUnaliveGroupExpireMillis=60000)
    controller, clock = h.controller, h.clock
    apply_id(h, "ghost")
    controller.expire_unalive_groups()
    clock.advance(50)
    controller.replicated.set_leading(False)
    assert controller.expire_unalive_groups() == []
    clock.advance(50)
    controller.replicated.set_leading(True)
    assert controller.expire_unalive_groups() == []       # this leader saw it unalive only now
    clock.advance(59)                                     # its takeover scan ran meanwhile
    assert controller.expire_unalive_groups() == [] and list(h.state.groups) == ["ghost"]
    clock.advance(2)
    assert controller.expire_unalive_groups() == ["ghost"] and h.state.groups == {}


def test_expiry_off_keeps_every_group():
    h = ControllerHarness(controllerUnaliveGroupExpireMillis=0)
    apply_id(h, "ghost")
    h.controller.expire_unalive_groups()
    h.clock.advance(10 ** 6)
    assert h.controller.expire_unalive_groups() == [] and list(h.state.groups) == ["ghost"]
