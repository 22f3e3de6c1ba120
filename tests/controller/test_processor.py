"""The controller's request codes, answered as Java's controller answers them, over encoded frames."""

import json

from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.controller.harness import ControllerHarness, FakeBroker


def two_brokers():
    h = ControllerHarness()
    a1, a2 = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    return h, a1, a2


def test_a_broker_group_starts_as_java_s_does():
    h, a1, a2 = two_brokers()
    answer = a1.start()
    assert answer.code == ResponseCode.SUCCESS
    assert a1.broker_id == 1                       # the controller hands out 1, never 0
    assert "masterBrokerId" not in answer.ext      # no master yet
    elected = a1.elect()
    assert elected.code == ResponseCode.SUCCESS
    assert elected.ext["masterBrokerId"] == "1" and elected.ext["masterAddress"] == a1.address
    assert elected.ext["masterEpoch"] == "1" and elected.ext["syncStateSetEpoch"] == "1"
    body = loads(elected.body)
    assert body["syncStateSet"] == [1]
    assert body["brokerMemberGroup"] == {"brokerAddrs": {1: a1.address}, "brokerName": "broker-a",
                                         "cluster": "DefaultCluster"}

    answer = a2.start()
    assert a2.broker_id == 2
    # the second one's register answer already names the master
    assert answer.ext["masterBrokerId"] == "1" and answer.ext["masterAddress"] == a1.address
    assert answer.ext["masterEpoch"] == "1"
    assert loads(answer.body) == {"syncStateSet": [1], "syncStateSetEpoch": 1}
    again = a2.elect()
    assert again.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    assert again.ext["masterBrokerId"] == "1"

    # the master adds the slave to the in-sync set
    grown = a1.alter_sync_state_set({1, 2}, 1, master_epoch=1)
    assert grown.code == ResponseCode.SUCCESS and grown.ext == {"newSyncStateSetEpoch": "2"}
    info = a2.replica_info()
    assert info.ext == {"masterBrokerId": "1", "masterAddress": a1.address, "masterEpoch": "1"}
    assert loads(info.body) == {"syncStateSet": [1, 2], "syncStateSetEpoch": 2}


def test_metadata_names_the_leader_where_brokers_connect():
    h = ControllerHarness()
    answer = h.call(RequestCode.CONTROLLER_GET_METADATA_INFO)
    assert answer.code == ResponseCode.SUCCESS
    assert answer.ext == {"group": "group1", "controllerLeaderId": "n0", "controllerLeaderAddress": "127.0.0.1:9878",
                          "isLeader": "true", "peers": "n0:127.0.0.1:9878;"}


def test_sync_state_data_lists_in_sync_and_other_replicas_with_liveness():
    h, a1, a2 = two_brokers()
    a1.start(), a1.elect(), a2.start()
    answer = h.call(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=json.dumps(["broker-a", "nope"]).encode())
    assert answer.code == ResponseCode.SUCCESS
    table = loads(answer.body)["replicasInfoTable"]
    assert list(table) == ["broker-a"]
    info = table["broker-a"]
    assert info["masterBrokerId"] == 1 and info["masterEpoch"] == 1 and info["syncStateSetEpoch"] == 1
    assert [r["brokerId"] for r in info["inSyncReplicas"]] == [1]
    assert info["notInSyncReplicas"] == [{"alive": True, "brokerAddress": a2.address, "brokerId": 2,
                                          "brokerName": "broker-a"}]


def test_errors_have_java_codes():
    h, a1, a2 = two_brokers()
    assert h.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "nope"}).code == \
        ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST
    elect = h.call(RequestCode.CONTROLLER_ELECT_MASTER, {"clusterName": "c", "brokerName": "nope", "brokerId": 1,
                                                         "designateElect": "false"})
    assert elect.code == ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    beat = h.call(RequestCode.BROKER_HEARTBEAT, {"clusterName": "c", "brokerAddr": "127.0.0.1:1", "brokerName": "b"})
    assert (beat.code, beat.remark) == (ResponseCode.CONTROLLER_INVALID_REQUEST, "Heart beat with empty brokerId")
    missing = h.call(RequestCode.BROKER_HEARTBEAT, {"brokerAddr": "127.0.0.1:1", "brokerName": "b", "brokerId": 1})
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR, "the custom field <clusterName> is null")
    garbage = h.call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, {"brokerName": "broker-a", "masterBrokerId": 1,
                                                                   "masterEpoch": 1}, body=b"\x00not json")
    assert garbage.code == ResponseCode.SYSTEM_ERROR and "SyncStateSet" in garbage.remark
    names = h.call(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=b'{"a": 1}')
    assert names.code == ResponseCode.SYSTEM_ERROR and "broker names" in names.remark
    register = h.call(RequestCode.CONTROLLER_REGISTER_BROKER, {"clusterName": "c", "brokerName": "nope",
                                                               "brokerId": 1, "brokerAddress": "127.0.0.1:1"})
    assert register.code == ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    assert register.ext == {"clusterName": "c", "brokerName": "nope"}
    # an id handed to another broker cannot be taken
    a1.start()
    stolen = h.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "DefaultCluster",
                                                             "brokerName": "broker-a", "appliedBrokerId": 1,
                                                             "registerCheckCode": "127.0.0.1:1;5"})
    assert stolen.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    first = h.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "c", "brokerName": "fresh",
                                                            "appliedBrokerId": 3, "registerCheckCode": "h:1;5"})
    assert first.code == ResponseCode.CONTROLLER_BROKER_ID_INVALID
    assert "fresh" not in h.state.groups
    # nothing above changed a table
    assert list(h.state.groups) == ["broker-a"] and h.state.applied == 1


def test_stale_epochs_and_wrong_masters_are_fenced():
    h, a1, a2 = two_brokers()
    a1.start(), a1.elect(), a2.start()
    assert a1.alter_sync_state_set({1, 2}, 1, master_epoch=0).code == ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH
    assert a1.alter_sync_state_set({1, 2}, 0, master_epoch=1).code == \
        ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    assert a2.alter_sync_state_set({1, 2}, 1, master_epoch=1).code == ResponseCode.CONTROLLER_INVALID_MASTER
    assert a1.alter_sync_state_set({1, 3}, 1, master_epoch=1).code == ResponseCode.CONTROLLER_INVALID_REPLICAS
    assert a1.alter_sync_state_set({2}, 1, master_epoch=1).code == ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    same = a1.alter_sync_state_set({1}, 1, master_epoch=1)
    assert same.code == ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED and "equal" in same.remark
    a2.die()
    assert a1.alter_sync_state_set({1, 2}, 1, master_epoch=1).code == ResponseCode.CONTROLLER_BROKER_NOT_ALIVE
    assert h.state.group("broker-a").sync_state_set == {1}


def test_a_follower_answers_not_leader_even_to_reads():
    h, a1, _ = two_brokers()
    a1.start()
    h.controller.replicated.set_leading(False)
    for answer in (a1.replica_info(), a1.elect(), a1.register(),
                   h.call(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=b'["broker-a"]')):
        assert (answer.code, answer.remark) == (ResponseCode.CONTROLLER_NOT_LEADER,
                                                "The controller is not in leader state")
        assert answer.ext is None
    # metadata and heartbeats are anyone's
    assert h.call(RequestCode.CONTROLLER_GET_METADATA_INFO).ext["isLeader"] == "false"
    assert a1.beat().code == ResponseCode.SUCCESS


def test_clean_broker_data_refuses_a_living_group_and_forgets_a_dead_one():
    h, a1, a2 = two_brokers()
    a1.start(), a1.elect(), a2.start()
    living = h.call(RequestCode.CLEAN_BROKER_DATA, {"clusterName": "DefaultCluster", "brokerName": "broker-a"})
    assert living.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert "still alive" in living.remark
    alive_id = h.call(RequestCode.CLEAN_BROKER_DATA, {"clusterName": "DefaultCluster", "brokerName": "broker-a",
                                                      "brokerControllerIdsToClean": "2"})
    assert alive_id.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    bad = h.call(RequestCode.CLEAN_BROKER_DATA, {"brokerName": "broker-a", "brokerControllerIdsToClean": "2;x"})
    assert bad.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA and "format" in bad.remark
    a2.die()
    cleaned = h.call(RequestCode.CLEAN_BROKER_DATA, {"clusterName": "DefaultCluster", "brokerName": "broker-a",
                                                     "brokerControllerIdsToClean": "2"})
    assert cleaned.code == ResponseCode.SUCCESS
    assert set(h.state.group("broker-a").brokers) == {1}
    forced = h.call(RequestCode.CLEAN_BROKER_DATA, {"clusterName": "DefaultCluster", "brokerName": "broker-a",
                                                    "isCleanLivingBroker": "true"})
    assert forced.code == ResponseCode.SUCCESS and h.state.groups == {}
    gone = h.call(RequestCode.CLEAN_BROKER_DATA, {"brokerName": "broker-a", "isCleanLivingBroker": "true"})
    assert gone.code == ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA and "not existed" in gone.remark


def test_controller_config_is_read_as_javas():
    """Updates: tests/controller/test_config_update.py."""
    h = ControllerHarness()
    text = h.call(RequestCode.GET_CONTROLLER_CONFIG).body.decode()
    assert "scanInactiveMasterInterval=5000" in text and "controllerDLegerPeers=" in text
    assert "\nkvConfigPath=" not in text and "\nlistenPort=" in text


def test_unknown_code_on_the_controller_port():
    h = ControllerHarness()
    answer = h.call(105, {"topic": "t"})
    assert (answer.code, answer.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 105 not supported")
