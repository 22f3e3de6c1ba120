"""namesrv-admin's controller commands against a real `twistd namesrv` with its controller embedded.

The groups are made as 5.x brokers in controller mode make them (1012, 1013, a heartbeat, 1003,
1002 and 1001 on the controller's port, each broker on a connection of its own); the brokers the
name server lists are registered there too, and the one getBrokerEpoch asks is a thread that
answers GET_BROKER_EPOCH_CACHE as a broker does.
"""

import json
import socket
import struct
import threading

import pytest

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.admin.test_admin_cli import admin
from tests.brokers import register_request
from tests.controllerbrokers import ControllerBroker, embedded_controller
from tests.integration.server import NamesrvProcess, free_port


EPOCH_CACHE = {"clusterName": "ClusterE", "brokerName": "broker-e", "brokerId": 1, "maxOffset": 4096,
               "epochList": [{"epoch": 1, "startOffset": 0, "endOffset": 1024},
                             {"epoch": 2, "startOffset": 1024, "endOffset": 9223372036854775807}]}


class EpochBroker:
    """A broker's remoting port that answers GET_BROKER_EPOCH_CACHE (1007) and nothing else."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.asked = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                request = decode_frame(conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL))
                self.asked.append(request.code)
                if request.code == RequestCode.GET_BROKER_EPOCH_CACHE:
                    answer = request.make_response(body=json.dumps(EPOCH_CACHE).encode())
                else:
                    answer = request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not here")
                conn.sendall(encode_frame(answer))

    def close(self):
        self.listener.close()


def unused_address():
    return "127.0.0.1:%d" % free_port()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """broker-a: 1 master, 2 in sync; broker-c: 1 master, 2 in sync (for electMaster); broker-d: 1
    master (for cleanBrokerMetadata); broker-e in the name server only, answering 1007."""
    controller_port = free_port()
    workdir = tmp_path_factory.mktemp("controller-admin")
    proc = NamesrvProcess(workdir, embedded_controller(workdir, controller_port)).start()
    brokers, epoch_broker, namesrv = {}, EpochBroker(), proc.client()
    try:
        for name in ("broker-a", "broker-c", "broker-d"):
            for _ in range(1 if name == "broker-d" else 2):
                broker = ControllerBroker(controller_port, "ClusterA", name, unused_address())
                broker.start()
                brokers[(name, broker.broker_id)] = broker
            if name != "broker-d":
                brokers[(name, 1)].sync({1, 2}, 1)
        # a first registration with one topic is refused (5.x's guard): two topics each
        for cluster, name, address, broker_id in [("ClusterA", "broker-a", brokers[("broker-a", 1)].address, 0),
                                                  ("ClusterA", "broker-a", brokers[("broker-a", 2)].address, 1),
                                                  ("ClusterA", "broker-c", brokers[("broker-c", 1)].address, 0),
                                                  ("ClusterE", "broker-e", epoch_broker.address, 0)]:
            answer = namesrv.call(register_request(cluster, name, address, broker_id, ["TopicA", "TopicB"]))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        yield {"proc": proc, "a": "127.0.0.1:%d" % controller_port, "n": "127.0.0.1:%d" % proc.port,
               "brokers": brokers, "epoch_broker": epoch_broker}
    finally:
        namesrv.close()
        epoch_broker.close()
        for broker in brokers.values():
            broker.close()
        proc.stop()


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
    assert err == ("namesrv-admin: updateControllerConfig: %s: NO_PERMISSION (16) Can not update config in black "
                   "list.\n" % fleet["a"])


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
