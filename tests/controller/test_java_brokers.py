"""Real Apache RocketMQ 5.3.3 brokers in controller mode, failing over through our controller.

They run where an Apache RocketMQ 5.3.3 installation is ($JAVAPEER5: docs/development.md) and skip, saying so,
where it is not. A small producer and reader (tools/faultlab/java/Traffic.java, ours) are compiled against the
peer's jars at test time: messages are sent while the master is killed, and every one that was
acknowledged must be readable afterwards (``allAckInSyncStateSet=true``).

Times are printed (the benchmark bench/scenarios/controller_failover.py measures them side by side with
Java's controller); the assertions are about outcomes, with generous deadlines.
"""

import os
import subprocess
import time


from namesrv.client import ask, leader_port, routed_master
from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode
from tests.controller.wire import controller_ports, group_credentials
from tests.integration.server import NamesrvProcess, free_port
from tests.javapeers import JavaBroker, free_broker_port, mqadmin, peer, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLUSTER = "ClusterJ"


def traffic_classes(tmp_path):
    home = peer("5.3.3")
    out = tmp_path / "traffic"
    out.mkdir()
    source = os.path.join(REPO, "tools", "faultlab", "java", "Traffic.java")
    subprocess.run(["javac", "-d", str(out), "-cp", os.path.join(home, "lib", "*"), source], check=True,
                   capture_output=True, timeout=120)
    return "%s:%s" % (out, os.path.join(home, "lib", "*"))


def traffic(classpath, *args):
    return subprocess.Popen(["java", "-Xmx128m", "-Drocketmq.client.logUseSlf4j=false", "-cp", classpath,
                             "Traffic", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def broker_properties(namesrv, controllers):
    return {"namesrvAddr": namesrv, "enableControllerMode": "true", "controllerAddr": controllers,
            "brokerId": "-1", "allAckInSyncStateSet": "true", "syncBrokerMetadataPeriod": "2000",
            "checkSyncStateSetPeriod": "2000", "syncControllerMetadataPeriod": "2000"}


def replica_info(controller_port):
    """broker-a's replica info (1004) from ``controller_port``: (answer, SyncStateSet body), or (None, None)."""
    answer = ask(controller_port, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"})
    return answer, (loads(answer.body) if answer is not None and answer.body else None)


def in_sync_count(controller_port):
    answer, body = replica_info(controller_port)
    return len(body["syncStateSet"]) if answer is not None and answer.code == 0 and body else 0


def two_brokers(tmp_path, namesrv, controllers):
    first = free_broker_port()
    brokers = []
    for index, port in enumerate((first, free_broker_port(low=first + 20))):
        brokers.append(JavaBroker("5.3.3", tmp_path / ("b%d" % (index + 1)), "broker-a", CLUSTER,
                                  broker_properties(namesrv, controllers), port=port).start())
    return brokers


def kill_master_while_sending(tmp_path, brokers, namesrv_ports, also_kill=()):
    """Send, kill -9 the master (and the processes in ``also_kill``) mid-way, wait for the survivor to be
    routed by the name server on ``namesrv_ports[-1]``; returns (seconds to routed, acked keys, failed keys,
    the killed broker, the survivor, the traffic classpath)."""
    classpath = traffic_classes(tmp_path)
    namesrv = ";".join("127.0.0.1:%d" % p for p in namesrv_ports)
    master_address = routed_master(namesrv_ports[0])
    master = next(b for b in brokers if master_address.endswith(":%d" % b.port))
    survivor = next(b for b in brokers if b is not master)
    # on every member, as a topic made long before a failure is: a slave copies its master's topic
    # configuration only every few seconds, and a master elected before that serves the topic with the
    # default 4 queues, hiding the messages of the others (the broker's behaviour with Java's controller too)
    # The master first: the slave replaces its whole table with its master's every 10 s, and a copy taken
    # before the master had the topic would drop it from the slave; elected, the slave would make it anew
    # with 4 queues, and a read would find half of the messages.
    for broker in (master, survivor):
        created = mqadmin("5.3.3", "updateTopic", "-n", namesrv, "-b", "127.0.0.1:%d" % broker.port, "-t",
                          "FailoverTopic", "-r", "8", "-w", "8", home=str(tmp_path))
        assert "success" in created.stdout, created.stdout + created.stderr
    wait_for(lambda: _both_hold(master.port, survivor.port, "FailoverTopic"), 40,
             "FailoverTopic with 8 queues on the master and the slave")
    sender = traffic(classpath, "send", namesrv, "FailoverTopic", "300", "20")
    acked, failed = [], []
    while len(acked) < 60:
        line = sender.stdout.readline()
        assert line, "the producer stopped before the kill"
        _tally(line, acked, failed)
    for process in (master.process, *also_kill):
        process.kill()
    killed_at = time.monotonic()
    survivor_address = "127.0.0.1:%d" % survivor.port
    survivor_port = namesrv_ports[-1]
    while routed_master(survivor_port) != survivor_address:
        assert time.monotonic() - killed_at < 60, "the survivor was not routed as master within 60 s"
        time.sleep(0.01)
    routed_after = time.monotonic() - killed_at
    for line in sender.stdout:
        _tally(line, acked, failed)
    sender.wait(120)
    return routed_after, acked, failed, master, survivor, classpath


GET_ALL_TOPIC_CONFIG = 21   # a broker's own request code (Java's RequestCode.GET_ALL_TOPIC_CONFIG)


def _topic_table(port):
    """A broker's topic table as it answers GET_ALL_TOPIC_CONFIG ({topic: config}; empty if no answer)."""
    answer = ask(port, GET_ALL_TOPIC_CONFIG, timeout=5.0)
    if answer is None or answer.code != 0 or not answer.body:
        return {}
    return loads(answer.body).get("topicConfigTable") or {}


def _both_hold(master_port, slave_port, topic):
    return all(_topic_table(port).get(topic, {}).get("writeQueueNums") == 8 for port in (master_port, slave_port))


def _tally(line, acked, failed):
    """The producer's ACK/FAIL lines; anything else it prints (client logs) is not a send."""
    words = line.split()
    if len(words) >= 2 and words[0] in ("ACK", "FAIL"):
        (acked if words[0] == "ACK" else failed).append(words[1])


def stored_keys(classpath, namesrv):
    """Every key the topic's queues hold, each queue read to its end offset (errors retried for up to 60 s)."""
    reader = traffic(classpath, "read", namesrv, "FailoverTopic", "60000")
    out, _ = reader.communicate(timeout=180)
    incomplete = [line for line in out.splitlines() if line.startswith("INCOMPLETE ")]
    assert not incomplete, "queues not readable to their end within 60 s: %s" % incomplete
    return {line.split()[1] for line in out.splitlines() if line.startswith("MSG ")}


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

        lost = set(acked) - stored_keys(classpath, namesrv)
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
        lost = set(acked) - stored_keys(classpath, "127.0.0.1:%d" % servers[steady].port)
        assert lost == set(), "acknowledged messages lost: %s" % sorted(lost)
    finally:
        for broker in brokers:
            broker.stop()
        for server in servers:
            server.stop()


def serving_epoch(controller_ports_):
    """broker-a's master epoch as the serving leader among ``controller_ports_`` answers it, or None."""
    for port in controller_ports_:
        answer, _ = replica_info(port)
        if answer is not None and answer.code == 0:
            return int(answer.ext["masterEpoch"])
    return None


def _knows_leader(port):
    answer = ask(port, RequestCode.CONTROLLER_GET_METADATA_INFO)
    return answer is not None and bool(answer.ext.get("controllerLeaderId"))
