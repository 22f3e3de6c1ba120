"""namesrv-admin's controller commands against a real `twistd namesrv` with its controller embedded.

The groups are made as 5.x brokers in controller mode make them (1012, 1013, a heartbeat, 1003,
1002 and 1001 on the controller's port, each broker on a connection of its own); the brokers the
name server lists are registered there too, and the one getBrokerEpoch asks is a thread that
answers GET_BROKER_EPOCH_CACHE as a broker does.
"""

import json

from namesrv.protocol.codes import RequestCode
from tests.admin.cli import admin
from tests.admin.controllers import fleet, unused_address  # noqa: F401 (fixtures)


def identity(name, broker_id, address, alive=True):
    return ("ReplicaIdentity{brokerName='%s', brokerId=%d, brokerAddress='%s', alive=%s}"
            % (name, broker_id, address, "true" if alive else "false"))


def test_controller_metadata_as_mqadmin_prints_it(fleet):
    status, out, err = admin("getControllerMetaData", "-a", fleet["a"])
    assert (status, err) == (0, "")
    assert out == ("\n#ControllerGroup\tgroup1\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t%s\n"
                   "#Peer:\tn0:%s\n" % (fleet["a"], fleet["a"]))
    status, out, _ = admin("--json", "getControllerMetaData", "-a", fleet["a"])
    assert json.loads(out) == {"group": "group1", "controllerLeaderId": "n0", "controllerLeaderAddress": fleet["a"],
                               "isLeader": True, "peers": ["n0:%s" % fleet["a"]]}


def test_sync_state_set_of_a_broker_and_of_a_cluster(fleet):
    a1, a2 = fleet["brokers"][("broker-a", 1)].address, fleet["brokers"][("broker-a", 2)].address
    status, out, err = admin("getSyncStateSet", "-a", fleet["a"], "-b", "broker-a")
    assert (status, err) == (0, "")
    assert out.split("\n") == [
        "", "#brokerName\tbroker-a", "#MasterBrokerId\t1", "#MasterAddr\t%s" % a1, "#MasterEpoch\t1",
        "#SyncStateSetEpoch\t2", "#SyncStateSetNums\t2", "", "InSyncReplica:\t%s" % identity("broker-a", 1, a1),
        "", "InSyncReplica:\t%s" % identity("broker-a", 2, a2), ""]
    # -c: the cluster's broker names come from the name servers of -n (broker-d never registered there)
    status, out, err = admin("getSyncStateSet", "-a", fleet["a"], "-c", "ClusterA", "-n", fleet["n"])
    assert (status, err) == (0, "")
    assert [line for line in out.splitlines() if line.startswith("#brokerName")] == [
        "#brokerName\tbroker-a", "#brokerName\tbroker-c"]
    status, out, _ = admin("--json", "getSyncStateSet", "-a", fleet["a"], "-b", "broker-a")
    assert sorted(r["brokerId"] for r in json.loads(out)["broker-a"]["inSyncReplicas"]) == [1, 2]


def test_sync_state_set_of_an_unknown_cluster_or_without_a_target(fleet):
    status, out, err = admin("getSyncStateSet", "-a", fleet["a"], "-c", "NoSuchCluster", "-n", fleet["n"])
    assert (status, out) == (1, "")
    assert err == ("namesrv-admin: getSyncStateSet: Make sure the specified clusterName exists or the name server "
                   "connected to is correct.\n")
    assert admin("getSyncStateSet", "-a", fleet["a"])[2] == (
        "namesrv-admin: getSyncStateSet: give -b brokerName or -c clusterName (with -n)\n")


def test_elect_master_designates_a_replica_then_refuses_the_same_again(fleet):
    c1, c2 = fleet["brokers"][("broker-c", 1)].address, fleet["brokers"][("broker-c", 2)].address
    status, out, err = admin("electMaster", "-a", fleet["a"], "-c", "ClusterA", "-bn", "broker-c", "-b", "2")
    assert (status, err) == (0, "")
    assert out.split("\n") == ["", "#ClusterName\tClusterA", "#BrokerName\tbroker-c", "#BrokerMasterAddr\t%s" % c2,
                               "#MasterEpoch\t2", "#SyncStateSetEpoch\t3", "\t#Broker\t1\t%s" % c1,
                               "\t#Broker\t2\t%s" % c2, ""]
    status, out, _ = admin("getSyncStateSet", "-a", fleet["a"], "-b", "broker-c")
    assert "#MasterBrokerId\t2" in out.splitlines()
    status, out, err = admin("electMaster", "-a", fleet["a"], "-c", "ClusterA", "-bn", "broker-c", "-b", "2")
    assert (status, out) == (1, "")
    assert err.startswith("namesrv-admin: electMaster: %s: CONTROLLER_MASTER_STILL_EXIST (2011) The old master 2 "
                          "is still alive" % fleet["a"])


def test_clean_broker_metadata_refuses_a_living_group_unless_told(fleet):
    status, _, err = admin("cleanBrokerMetadata", "-a", fleet["a"], "-bn", "broker-d")
    assert status == 1 and err == ("namesrv-admin: cleanBrokerMetadata: cleanLivingBroker option is false, "
                                   "clusterName option can not be empty.\n")
    status, _, err = admin("cleanBrokerMetadata", "-a", fleet["a"], "-bn", "broker-d", "-c", "ClusterA")
    assert status == 1 and err == ("namesrv-admin: cleanBrokerMetadata: %s: CONTROLLER_INVALID_CLEAN_BROKER_METADATA "
                                   "(2009) Broker broker-d is still alive, clean up failure\n" % fleet["a"])
    status, _, err = admin("cleanBrokerMetadata", "-a", fleet["a"], "-bn", "broker-d", "-c", "ClusterA", "-b", "x;1")
    assert status == 1 and "CONTROLLER_INVALID_CLEAN_BROKER_METADATA (2009) Please set the option" in err
    status, out, err = admin("cleanBrokerMetadata", "-a", fleet["a"], "-bn", "broker-d", "-c", "ClusterA", "-l")
    assert (status, out, err) == (0, "clear broker broker-d metadata from controller success! \n", "")
    status, out, _ = admin("--json", "getSyncStateSet", "-a", fleet["a"], "-b", "broker-d")
    assert (status, json.loads(out)) == (0, {})


def test_controller_config_read_updated_and_black_listed(fleet):
    status, out, err = admin("getControllerConfig", "-a", fleet["a"])
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "============%s============" % fleet["a"]
    assert "%-50s=  %s" % ("controllerDLegerGroup", "group1") in lines
    status, out, err = admin("updateControllerConfig", "-a", fleet["a"], "-k", "scanInactiveMasterInterval",
                             "-v", "6000")
    assert (status, out, err) == (0, "update controller config success![%s]\nscanInactiveMasterInterval : 6000\n"
                                  % fleet["a"], "")
    status, out, _ = admin("--json", "getControllerConfig", "-a", fleet["a"])
    assert json.loads(out)[fleet["a"]]["scanInactiveMasterInterval"] == "6000"
    status, out, err = admin("updateControllerConfig", "-a", fleet["a"], "-k", "controllerDLegerPeers", "-v", "x")
    assert (status, out) == (1, "")
    assert err.startswith("namesrv-admin: updateControllerConfig: %s: NO_PERMISSION (16) Can not update config in "
                          "black list. Refused keys: controllerDLegerPeers (not changeable at run time)." % fleet["a"])


def test_the_controller_port_changes_no_name_server_property(fleet):
    """Issue 54, finding 7: the embedded controller shares the name server's configuration, and these two sent
    to the controller's port made the name server refuse new connections and topic lists."""
    for key, value in (("serverMaxConnections", "1"), ("enableTopicList", "false")):
        status, _, err = admin("updateControllerConfig", "-a", fleet["a"], "-k", key, "-v", value)
        assert status == 1 and ("Refused keys: %s (a name server property: updateNamesrvConfig on the name "
                                "server's port)" % key) in err
    for _ in range(3):   # a new connection each time
        status, out, err = admin("topicList", "-c", "-n", fleet["n"])
        assert (status, err) == (0, "")


def test_broker_epoch_is_asked_of_the_brokers_the_name_server_lists(fleet):
    expected = ("\n#clusterName\tClusterE\n#brokerName\tbroker-e\n#brokerAddr\t%s\n#brokerId\t1"
                "\n#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=1024}"
                "\n#Epoch: EpochEntry{epoch=2, startOffset=1024, endOffset=4096}\n" % fleet["epoch_broker"].address)
    for target in (("-b", "broker-e"), ("-c", "ClusterE")):
        status, out, err = admin("getBrokerEpoch", *target, "-n", fleet["n"])
        assert (status, out, err) == (0, expected, "")
    assert fleet["epoch_broker"].asked.count(RequestCode.GET_BROKER_EPOCH_CACHE) == 2
    status, out, err = admin("getBrokerEpoch", "-b", "broker-e")
    assert (status, err) == (1, "namesrv-admin: getBrokerEpoch: no name server address: give -n host:port or "
                                "set NAMESRV_ADDR\n")


def test_an_unreachable_controller_is_one_line():
    dead = unused_address()
    status, out, err = admin("getControllerMetaData", "-a", dead)
    assert (status, out) == (1, "")
    assert err == "namesrv-admin: getControllerMetaData: cannot reach controller %s: Connection refused\n" % dead
    status, _, err = admin("electMaster", "-a", "nowhere", "-c", "C", "-bn", "b", "-b", "1")
    assert err == "namesrv-admin: electMaster: bad controller address 'nowhere' (expected host:port)\n"
