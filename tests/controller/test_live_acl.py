"""Liveness nobody can take over (issue 54, item 4, finding 1), over real sockets against a live `twistd namesrv`
with its embedded controller and ``aclEnable=true``: brokers sign as their broker group's user; clients that
hold no broker's credentials (unsigned, a reader, another group's broker) send each of finding 1's attacks,
from 127.0.0.1 and from 127.0.0.2, and change nothing: no master, address, in-sync set, id or route. Their
connections closing makes the controller declare nobody dead. A broker whose own connection blips keeps
working on the new one.

Before fe6f726 (the request classes on the controller's port) the first test failed: the unsigned
heartbeat moved the master's liveness onto the attacker's connection, and its close failed the master over.
"""

import json
import time

import pytest

from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode as C, ResponseCode
from tests.brokers import register_request, route_request
from tests.controller.wire import WireBroker, controller_ports, controller_properties
from tests.integration.server import NamesrvProcess
from tests.security.live import ALLOWED_SOURCE, BROKER_A, BROKER_B, GROUPS_ACL, OTHER_SOURCE, READER, \
    SourcedClient, signed

ATTACKERS = (("unsigned", None), ("a reader", READER), ("broker-b's broker", BROKER_B))
CLUSTER = "ClusterW"
#: an address of this machine's loopback that no broker listens on (a notification sent there goes nowhere)
ATTACKER_ADDRESS = "127.0.0.66:666"


class SignedBroker(WireBroker):
    """A fake 5.x broker of broker-a that signs every request as its user, as ``innerClientAuthenticationCredentials``
    makes a 5.3.3 broker do."""

    def __init__(self, controller_port, credentials=BROKER_A):
        WireBroker.__init__(self, controller_port, cluster=CLUSTER)
        self.controller_port, self.credentials = controller_port, credentials

    def call(self, code, ext=None, body=None):
        return self.client.call(signed(code, ext, body, self.credentials))

    def beat(self):
        self.client.send(signed(C.BROKER_HEARTBEAT, {
            "clusterName": self.cluster, "brokerAddr": self.address, "brokerName": self.name,
            "brokerId": self.broker_id, "heartbeatTimeoutMills": 10000}, credentials=self.credentials, oneway=True))

    def reconnect(self):
        """A new connection (the old one stays open until the caller closes it)."""
        old, self.client = self.client, SourcedClient(self.controller_port)
        return old

    def replica_info(self):
        answer = self.call(C.CONTROLLER_GET_REPLICA_INFO, {"brokerName": self.name})
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        body = loads(answer.body)
        return (answer.ext["masterBrokerId"], answer.ext["masterAddress"], answer.ext["masterEpoch"],
                sorted(body["syncStateSet"]), body["syncStateSetEpoch"])

    def next_id(self):
        return self.call(C.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": CLUSTER, "brokerName": self.name}).ext[
            "nextBrokerId"]


@pytest.fixture
def server(tmp_path):
    (tmp_path / "plain_acl.yml").write_text(GROUPS_ACL)
    (port,) = controller_ports(1)
    properties = dict(controller_properties(tmp_path, port), aclEnable="true", aclFile=str(tmp_path / "plain_acl.yml"))
    process = NamesrvProcess(tmp_path, properties).start()
    process.controller_port = port
    yield process
    process.stop()


def a_group_in_sync(server):
    """broker-a: a master (id 1) and a slave (id 2) in its in-sync set, both signing; the master registered
    on the name server's port too (topic Liveness)."""
    master, slave = SignedBroker(server.controller_port), SignedBroker(server.controller_port)
    assert master.start().code == ResponseCode.SUCCESS and master.broker_id == 1
    assert master.elect().code == ResponseCode.SUCCESS
    assert slave.start().code == ResponseCode.SUCCESS and slave.broker_id == 2
    altered = master.call(C.CONTROLLER_ALTER_SYNC_STATE_SET, {"brokerName": "broker-a", "masterBrokerId": 1,
                                                               "masterEpoch": 1},
                          json.dumps({"syncStateSet": [1, 2], "syncStateSetEpoch": 1}).encode())
    assert altered.code == ResponseCode.SUCCESS, altered.remark
    namesrv = SourcedClient(server.port)
    registered = namesrv.call(_signed_registration(master.address, ["Liveness", "Liveness-2"]))
    assert registered.code == ResponseCode.SUCCESS, registered.remark
    return master, slave, namesrv


def _signed_registration(address, topics, broker_name="broker-a", credentials=BROKER_A):
    template = register_request(CLUSTER, broker_name, address, topics=topics)
    return signed(C.REGISTER_BROKER, template.ext, template.body, credentials, version=template.version)


def routed(server, topic):
    """The addresses the name server routes ``topic`` to (read by broker-a's user), or None."""
    with SourcedClient(server.port) as client:
        answer = client.call(signed(C.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, credentials=BROKER_A))
    if answer.code != ResponseCode.SUCCESS:
        return None
    return sorted(address for broker in loads(answer.body)["brokerDatas"]
                  for address in broker["brokerAddrs"].values())


def attacks(master, epoch, sync_epoch):
    """Finding 1's requests, as whoever holds no broker-a credentials would send them."""
    group = {"clusterName": CLUSTER, "brokerName": "broker-a"}
    return [
        (C.BROKER_HEARTBEAT, dict(group, brokerAddr=master.address, brokerId=1, heartbeatTimeoutMills=600000), None),
        (C.CONTROLLER_REGISTER_BROKER, dict(group, brokerId=1, brokerAddress=ATTACKER_ADDRESS), None),
        (C.CONTROLLER_ALTER_SYNC_STATE_SET, {"brokerName": "broker-a", "masterBrokerId": 1, "masterEpoch": epoch},
         json.dumps({"syncStateSet": [1], "syncStateSetEpoch": sync_epoch}).encode()),
        (C.CONTROLLER_GET_NEXT_BROKER_ID, group, None),
        (C.CONTROLLER_APPLY_BROKER_ID, dict(group, appliedBrokerId=3, registerCheckCode=ATTACKER_ADDRESS + ";1"), None),
        (C.CONTROLLER_ELECT_MASTER, dict(group, brokerId=2, designateElect="false"), None),
        (C.CONTROLLER_ELECT_MASTER, dict(group, brokerId=2, designateElect="true"), None),
        (C.CLEAN_BROKER_DATA, dict(group, brokerControllerIdsToClean="1", isCleanLivingBroker="true"), None),
        (C.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"}, None),
    ]


def namesrv_attacks(master):
    """On the name server's port: a route of the attacker's, and the master's unregistration."""
    evil = register_request(CLUSTER, "broker-a", ATTACKER_ADDRESS, topics=["Evil", "Evil-2"])
    return [(C.REGISTER_BROKER, evil.ext, evil.body),
            (C.UNREGISTER_BROKER, {"clusterName": CLUSTER, "brokerName": "broker-a", "brokerAddr": master.address,
                                   "brokerId": "0"}, None)]


def settle(notifications, seconds=2.0):
    """Wait up to ``seconds`` for a role-change notification (one would follow a master declared dead)."""
    return notifications.arrived.wait(seconds)


def test_no_client_without_the_groups_credentials_moves_its_master_address_in_sync_set_or_route(server):
    master, slave, namesrv = a_group_in_sync(server)
    try:
        before = master.replica_info()
        next_id = master.next_id()
        assert before[:2] == ("1", master.address) and before[3] == [1, 2]
        answers = []
        for who, credentials in ATTACKERS:
            for source in (ALLOWED_SOURCE, OTHER_SOURCE):
                with SourcedClient(server.controller_port, source) as attacker:
                    for code, ext, body in attacks(master, before[2], before[4]):
                        answers.append((who, source, code, attacker.call(signed(code, ext, body, credentials))))
                    # the heartbeat as brokers send it, one-way: nothing answers, nothing may change
                    attacker.send(signed(C.BROKER_HEARTBEAT, {"clusterName": CLUSTER, "brokerName": "broker-a",
                                                              "brokerAddr": master.address, "brokerId": "1"},
                                         credentials=credentials, oneway=True))
                    attacker.call(signed(C.CONTROLLER_GET_METADATA_INFO, credentials=credentials))   # it was read
                with SourcedClient(server.port, source) as attacker:
                    for code, ext, body in namesrv_attacks(master):
                        answers.append((who, source, code, attacker.call(signed(code, ext, body, credentials))))
        # every attacker's connection has closed: had one carried the master's liveness, the master would be
        # declared dead now and the slave told it leads
        assert not settle(slave.notifications), [frame.ext for frame in slave.notifications.received]
        assert master.replica_info() == before
        assert master.next_id() == next_id
        assert routed(server, "Liveness") == [master.address]
        assert routed(server, "Evil") is None
        wrong = [(who, source, code, answer.code, answer.remark) for who, source, code, answer in answers
                 if answer.code != ResponseCode.NO_PERMISSION]
        assert not wrong
        # the group's own broker still may: its heartbeat, its registration, its in-sync set
        master.beat()
        assert master.call(C.CONTROLLER_REGISTER_BROKER, {"clusterName": CLUSTER, "brokerName": "broker-a",
                                                          "brokerId": 1, "brokerAddress": master.address}).code \
            == ResponseCode.SUCCESS
        assert master.replica_info() == before
    finally:
        namesrv.close()
        master.close()
        slave.close()


def test_a_broker_whose_connection_blips_keeps_working(server):
    master, slave, namesrv = a_group_in_sync(server)
    try:
        before = master.replica_info()
        # a new connection beats before the old one is seen to close: the master stays the master
        old = master.reconnect()
        master.beat()
        master.call(C.CONTROLLER_GET_METADATA_INFO)   # the beat was handled
        old.close()
        assert not settle(slave.notifications)
        assert master.replica_info() == before

        # the old connection closes first: the controller fails over to the slave, as Java does ...
        master.client.close()
        assert slave.notifications.arrived.wait(20), "the slave was not told it leads"
        after = slave.replica_info()
        assert after[:2] == ("2", slave.address)
        # ... and the old master, back on a new connection and signing, is a broker of the group again
        master.reconnect()
        master.beat()
        registered = master.call(C.CONTROLLER_REGISTER_BROKER, {"clusterName": CLUSTER, "brokerName": "broker-a",
                                                                "brokerId": 1, "brokerAddress": master.address})
        assert registered.code == ResponseCode.SUCCESS and registered.ext["masterAddress"] == slave.address
        assert master.replica_info()[:3] == after[:3]

        # on the name server's port: the broker's connection closes (its route goes) and comes back signed
        namesrv.close()
        deadline = time.monotonic() + 20
        while routed(server, "Liveness") is not None:
            assert time.monotonic() < deadline, "the closed connection's route stayed"
            time.sleep(0.05)
        namesrv = SourcedClient(server.port)
        assert namesrv.call(_signed_registration(master.address, ["Liveness", "Liveness-2"])).code == ResponseCode.SUCCESS
        assert routed(server, "Liveness") == [master.address]
        assert namesrv.call(route_request("Liveness")).code == ResponseCode.NO_PERMISSION   # unsigned, still not
    finally:
        namesrv.close()
        master.close()
        slave.close()
