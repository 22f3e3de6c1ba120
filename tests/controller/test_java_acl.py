"""Real Apache RocketMQ brokers through name servers and controllers with ``aclEnable=true`` (issue 54, item 3).

5.3.3 brokers sign every request to name servers and controllers with ``innerClientAuthenticationCredentials``
(their BrokerOuterAPI's AclClientRPCHook): a group of two registers, elects, keeps its in-sync set and fails
over when its master and the controller leader are killed together, through three name servers with embedded
controllers, losing no acknowledged message, and none of their requests is refused. The producer and the reader
sign as a reading user, the test's probes as an admin. (Such a broker first stores its inner user in its own user
store, and refuses to start without one: the tests give it MemoryUsers, tests/controller/java/, as the peer kit's
RocksDB has no native library for the Local one.)

A 4.9.8 broker cannot sign: it registers through ``brokerAllowedAddresses``.

They run where the Java peers are ($JAVAPEER5, $JAVAPEER: docs/development.md) and skip, saying so, elsewhere.
Times are printed (bench.scenarios.controller_failover --sides ours,ours-acl measures them side by side with ACL off).
"""

import time

from namesrv.client import ask, leader_port, routed_master
from namesrv.protocol.codes import RequestCode
from tests.controller.javagroup import CLUSTER, in_sync_count, kill_master_while_sending, serving_epoch, \
    two_brokers
from tests.controller.wire import controller_ports, group_credentials
from tests.integration.server import NamesrvProcess, free_port
from tests.javapeers import JavaBroker, inner_credentials, peer, stored_keys, tools_home, wait_for
from tests.security.live import ADMIN10, BROKER_A, GROUPS_ACL, READER



def acl_name_servers(tmp_path, count, extra=None):
    """``count`` name servers with embedded controllers (one Raft group), ACL on; started."""
    (tmp_path / "plain_acl.yml").write_text(GROUPS_ACL)
    ports = controller_ports(count)
    peers = ";".join("n%d-127.0.0.1:%d" % (i, p) for i, p in enumerate(ports))
    properties = {"enableControllerInNamesrv": "true", "controllerDLegerGroup": "g", "controllerDLegerPeers": peers,
                  "routeReadWorkers": "0", "aclEnable": "true", "aclFile": str(tmp_path / "plain_acl.yml")}
    if count > 1:
        properties.update(group_credentials(tmp_path, ["n%d" % i for i in range(count)]))
    properties.update(extra or {})
    servers = []
    for i in range(count):
        (tmp_path / ("ns%d" % i)).mkdir()
        servers.append(NamesrvProcess(tmp_path / ("ns%d" % i), dict(
            properties, controllerDLegerSelfId="n%d" % i, controllerStorePath=str(tmp_path / ("ctrl%d" % i))),
            port=free_port()))
    for server in servers:
        server.start()
    return servers, ports


def refusals(servers):
    """The refusals the servers logged, but the unsigned cluster-info probe each start sends."""
    return [line for server in servers for line in server.log().splitlines()
            if "[namesrv.security.refused" in line
            and not ("GET_BROKER_CLUSTER_INFO (106)" in line and "No accessKey" in line)]


def test_signing_5_3_3_brokers_fail_over_through_acl_name_servers_and_controllers_losing_nothing(tmp_path,
                                                                                                  monkeypatch):
    peer("5.3.3")
    monkeypatch.setenv("ROCKETMQ_HOME", tools_home(tmp_path, "admin", *ADMIN10))   # mqadmin updateTopic signs
    servers, ports = acl_name_servers(tmp_path, 3)
    namesrv = ";".join("127.0.0.1:%d" % s.port for s in servers)
    brokers = []
    try:
        started = time.monotonic()
        signing, classpath = inner_credentials(tmp_path, *BROKER_A)
        brokers = two_brokers(tmp_path, namesrv, ";".join("127.0.0.1:%d" % p for p in ports), signing, classpath)
        wait_for(lambda: routed_master(servers[0].port, credentials=ADMIN10) is not None, 60, "a master routed")
        print("master routed %.1f s after the signing brokers started" % (time.monotonic() - started))

        def leader_index():
            port = leader_port(ports, credentials=ADMIN10)
            return ports.index(port) if port in ports else None
        wait_for(lambda: leader_index() is not None and in_sync_count(ports[leader_index()], ADMIN10) == 2, 60,
                 "a controller leader and both brokers in sync")
        leader = leader_index()
        epoch_before = serving_epoch([ports[leader]], ADMIN10)
        others = [i for i in range(3) if i != leader]
        routed_after, acked, failed, _, survivor, classpath = kill_master_while_sending(
            tmp_path, brokers, [servers[i].port for i in others], also_kill=[servers[leader].process],
            credentials=READER)
        print("ACL on: controller leader n%d and the broker master killed: survivor routed %.3f s later; %d acked, "
              "%d failed" % (leader, routed_after, len(acked), len(failed)))
        assert serving_epoch([ports[i] for i in others], ADMIN10) > epoch_before
        assert "k299" in acked, "sending did not work again after the failover (failed: %s)" % failed
        reading_at = "127.0.0.1:%d" % servers[others[0]].port
        lost = set(acked) - stored_keys(classpath, reading_at, "FailoverTopic", READER)
        assert lost == set(), "acknowledged messages lost: %s" % sorted(lost)
        # every request of the brokers, the clients and the probes was signed, and allowed
        assert refusals(servers) == []
        # and the same name servers refuse the unsigned
        assert ask(servers[others[0]].port, RequestCode.GET_BROKER_CLUSTER_INFO).code == 16
        assert ask(ports[others[0]], RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"}).code == 16
    finally:
        for broker in brokers:
            broker.stop()
        for server in servers:
            server.stop()


def test_a_4_9_8_broker_registers_through_broker_allowed_addresses(tmp_path):
    peer("4.9.8")
    (tmp_path / "ns").mkdir()
    (tmp_path / "plain_acl.yml").write_text(GROUPS_ACL)
    server = NamesrvProcess(tmp_path / "ns", {"aclEnable": "true", "aclFile": str(tmp_path / "plain_acl.yml"),
                                              "brokerAllowedAddresses": "127.0.0.1/32"}).start()
    broker = JavaBroker("4.9.8", tmp_path / "b", "broker-a", CLUSTER,
                        {"namesrvAddr": "127.0.0.1:%d" % server.port}).start()
    try:
        wait_for(lambda: routed_master(server.port, credentials=ADMIN10) == "127.0.0.1:%d" % broker.port, 90,
                 "the 4.9.8 broker routed")
        route = ask(server.port, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "broker-a"}, credentials=READER)
        assert route.code == 0, route.remark   # its own topic, registered
        # its unsigned broker-control requests passed from the listed address: nothing refused but the probe below
        assert refusals([server]) == []
        assert ask(server.port, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "broker-a"}).code == 16
    finally:
        broker.stop()
        server.stop()
