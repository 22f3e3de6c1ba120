"""Real Apache RocketMQ 5.3.3 brokers in controller mode, failing over through our controller.

They run where an Apache RocketMQ 5.3.3 installation is ($JAVAPEER5: docs/development.md) and skip, saying so,
where it is not. A small producer and reader (tools/faultlab/java/Traffic.java, ours) are compiled against the
peer's jars at test time: messages are sent while the master is killed, and every one that was
acknowledged must be readable afterwards (``allAckInSyncStateSet=true``).

Times are printed (the benchmark bench/scenarios/controller_failover.py measures them side by side with
Java's controller); the assertions are about outcomes, with generous deadlines.
"""

import time

from namesrv.client import ask, leader_port, routed_master
from namesrv.protocol.codes import RequestCode
from tests.controller.javagroup import CLUSTER, broker_properties, in_sync_count, kill_master_while_sending, \
    replica_info, serving_epoch, two_brokers
from tests.controller.wire import controller_ports, group_credentials
from tests.integration.server import NamesrvProcess, free_port
from tests.javapeers import JavaBroker, peer, stored_keys, wait_for


def test_a_5_3_3_group_fails_over_through_our_embedded_controller_without_losing_acked_messages(tmp_path):
    peer("5.3.3")
    (controller_port,) = controller_ports(1)
    (tmp_path / "ns").mkdir()
    server = NamesrvProcess(tmp_path / "ns", {
        "enableControllerInNamesrv": "true", "controllerDLegerGroup": "g", "controllerDLegerSelfId": "n0",
        "controllerDLegerPeers": "n0-127.0.0.1:%d" % controller_port, "routeReadWorkers": "0",
        "controllerStorePath": str(tmp_path / "ctrl")}).start()
    namesrv = "127.0.0.1:%d" % server.port
    brokers = []
    try:
        started = time.monotonic()
        brokers = two_brokers(tmp_path, namesrv, "127.0.0.1:%d" % controller_port)
        wait_for(lambda: routed_master(server.port) is not None, 30, "a master routed within 30 s of start")
        print("master routed %.1f s after the brokers started" % (time.monotonic() - started))
        wait_for(lambda: in_sync_count(controller_port) == 2, 60, "both brokers in sync")

        routed_after, acked, failed, old, survivor, classpath = kill_master_while_sending(
            tmp_path, brokers, [server.port])
        print("survivor routed as brokerId 0 %.3f s after kill -9 of the master; %d acked, %d failed"
              % (routed_after, len(acked), len(failed)))
        answer, body = replica_info(controller_port)
        assert answer.ext["masterAddress"] == "127.0.0.1:%d" % survivor.port and int(answer.ext["masterEpoch"]) == 2
        assert "k299" in acked, "sending did not work again after the failover (failed: %s)" % failed

        # the old master comes back as a slave, with its id, and joins the in-sync set again
        back = JavaBroker("5.3.3", old.store, "broker-a", CLUSTER, broker_properties(namesrv, "127.0.0.1:%d"
                                                                                   % controller_port),
                          port=old.port).start()
        brokers.append(back)
        wait_for(lambda: in_sync_count(controller_port) == 2, 60, "the old master rejoins the in-sync set")
        assert routed_master(server.port) == "127.0.0.1:%d" % survivor.port

        lost = set(acked) - stored_keys(classpath, namesrv, "FailoverTopic")
        assert lost == set(), "acknowledged messages lost: %s" % sorted(lost)
    finally:
        for broker in brokers:
            broker.stop()
        server.stop()


def test_three_name_servers_lose_the_controller_leader_and_the_broker_master_together(tmp_path):
    peer("5.3.3")
    ports = controller_ports(3)
    peers = ";".join("n%d-127.0.0.1:%d" % (i, p) for i, p in enumerate(ports))
    credentials = group_credentials(tmp_path)
    servers = []
    for i, port in enumerate(ports):
        (tmp_path / ("ns%d" % i)).mkdir()
        servers.append(NamesrvProcess(tmp_path / ("ns%d" % i), {
            "enableControllerInNamesrv": "true", "controllerDLegerGroup": "g", "controllerDLegerSelfId": "n%d" % i,
            "controllerDLegerPeers": peers, "routeReadWorkers": "0", **credentials,
            "controllerStorePath": str(tmp_path / ("ctrl%d" % i))}, port=free_port()))
    for server in servers:
        server.start()
    namesrv = ";".join("127.0.0.1:%d" % s.port for s in servers)
    controllers = ";".join("127.0.0.1:%d" % p for p in ports)
    brokers = []
    try:
        brokers = two_brokers(tmp_path, namesrv, controllers)
        wait_for(lambda: routed_master(servers[0].port) is not None, 60, "a master routed")

        def leader_index():
            port = leader_port(ports)
            return ports.index(port) if port in ports else None
        wait_for(lambda: leader_index() is not None and in_sync_count(ports[leader_index()]) == 2, 60,
                 "a controller leader and both brokers in sync")
        leader = leader_index()
        epoch_before = int(replica_info(ports[leader])[0].ext["masterEpoch"])
        others = [i for i in range(3) if i != leader]
        routed_after, acked, failed, old, survivor, classpath = kill_master_while_sending(
            tmp_path, brokers, [servers[i].port for i in others], also_kill=[servers[leader].process])
        print("controller leader n%d and the broker master killed: survivor routed %.3f s later; %d acked, "
              "%d failed" % (leader, routed_after, len(acked), len(failed)))
        epoch_after = serving_epoch([ports[i] for i in others])
        assert epoch_after > epoch_before

        # the killed controller comes back and catches up: with the new leader killed in turn, it leads
        # (or follows the third one) from a state that has the failover, never an older epoch
        servers[leader].start()
        wait_for(lambda: leader_index() is not None, 30, "a leader known after the restart")
        new_leader = leader_index()
        wait_for(lambda: _knows_leader(ports[leader]), 30, "the restarted controller follows the leader")
        servers[new_leader].process.kill()
        remaining = [ports[i] for i in range(3) if i != new_leader]
        wait_for(lambda: serving_epoch(remaining) is not None, 30, "a leader among the two left")
        assert serving_epoch(remaining) >= epoch_after
        # read through the name server that ran throughout (a restarted one may route from its snapshot until
        # the brokers' next registration)
        (steady,) = [i for i in range(3) if i not in (leader, new_leader)] or [others[0]]
        lost = set(acked) - stored_keys(classpath, "127.0.0.1:%d" % servers[steady].port, "FailoverTopic")
        assert lost == set(), "acknowledged messages lost: %s" % sorted(lost)
    finally:
        for broker in brokers:
            broker.stop()
        for server in servers:
            server.stop()


def _knows_leader(port):
    answer = ask(port, RequestCode.CONTROLLER_GET_METADATA_INFO)
    return answer is not None and bool(answer.ext.get("controllerLeaderId"))
