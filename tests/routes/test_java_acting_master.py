"""5.x's other failover, slave-acting-master, with a real Apache RocketMQ 5.3.3 group and our name server.

No controller: a SYNC_MASTER (brokerId 0) and its SLAVE (brokerId 1), both with ``enableSlaveActingMaster=true``,
registered with a ``twistd namesrv`` that has ``notifyMinBrokerIdChanged=true`` and ``supportActingMaster=true``.
Messages are sent, the master is killed (-9); the name server tells the slave at once that the group's lowest id is
now its own (905: the slave logs "Min broker changed ... new 1-<its address>" and starts the master's timers), routes it as the group's read-only
acting master, and every acknowledged message is read back from it. The master then comes back, and the slave is
told again (lowest id 0). Skips without $JAVAPEER5 (docs/development.md).
"""

import json
import os
import time

from namesrv.client import ask, routed_master
from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode
from tests.integration.server import NamesrvProcess
from tests.javapeers import (JavaBroker, free_broker_port, mqadmin, peer, stored_keys, tally, traffic,
                             traffic_classes, wait_for)

CLUSTER = "ActingCluster"
TOPIC = "ActingTopic"
#: the name server's scan for expired brokers (scanNotActiveBrokerInterval): "within one scan"
SCAN_SECONDS = 5.0


def group_member(tmp_path, name, broker_id, namesrv, port):
    role = "SYNC_MASTER" if broker_id == 0 else "SLAVE"
    return JavaBroker("5.3.3", tmp_path / ("b%d" % broker_id), "broker-a", CLUSTER, {
        "namesrvAddr": namesrv, "brokerId": str(broker_id), "brokerRole": role, "enableSlaveActingMaster": "true",
        # a slave answers pulls (an acting master serves the reads); a send is acknowledged once both hold it
        # (5.x's SYNC_MASTER waits for inSyncReplicas copies, 1 by default: the master's own)
        "slaveReadEnable": "true", "totalReplicas": "2", "inSyncReplicas": "2", "brokerIP2": "127.0.0.1"}, port=port)


def topic_route_master(namesrv_port):
    """The address TOPIC's route names as broker-a's brokerId 0 (an acting master too), or None."""
    answer = ask(namesrv_port, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    if answer is None or answer.code != 0 or not answer.body:
        return None
    for data in loads(answer.body).get("brokerDatas") or ():
        addrs = data.get("brokerAddrs") or {}
        return addrs.get(0) or addrs.get("0")
    return None


def unregistered(events_file, port):
    """The event log's first broker_unregistered record of the broker on ``port``."""
    with open(events_file) as f:
        for line in f:
            record = json.loads(line)
            if record.get("event") == "broker_unregistered" and record.get("brokerAddr") == "127.0.0.1:%d" % port:
                return record
    return None


def told(events_file, min_broker_id, after):
    """The event log's first min_broker_id_changed record naming ``min_broker_id`` at or after ``after`` (epoch
    seconds), or None."""
    try:
        with open(events_file) as f:
            for line in f:
                record = json.loads(line)
                if record.get("event") == "min_broker_id_changed" and record.get("minBrokerId") == min_broker_id \
                        and record["ts"] >= after * 1000:
                    return record
    except (OSError, ValueError):
        return None
    return None


def test_the_slave_is_told_at_once_acts_as_master_and_loses_no_acknowledged_message(tmp_path):
    peer("5.3.3")
    (tmp_path / "ns").mkdir()
    server = NamesrvProcess(tmp_path / "ns", {"notifyMinBrokerIdChanged": "true", "supportActingMaster": "true",
                                              "routeReadWorkers": "0"}).start()
    events_file = os.path.join(server.properties["logDir"], "namesrv-events-%d.log" % server.port)
    namesrv = "127.0.0.1:%d" % server.port
    master_port = free_broker_port()
    slave_port = free_broker_port(low=master_port + 20)
    master = group_member(tmp_path, "broker-a", 0, namesrv, master_port).start()
    slave = group_member(tmp_path, "broker-a", 1, namesrv, slave_port).start()
    brokers = [master, slave]
    try:
        wait_for(lambda: routed_master(server.port) == "127.0.0.1:%d" % master_port, 60, "the master routed")
        for broker in (master, slave):
            created = mqadmin("5.3.3", "updateTopic", "-n", namesrv, "-b", "127.0.0.1:%d" % broker.port, "-t", TOPIC,
                              "-r", "4", "-w", "4", home=str(tmp_path))
            assert "success" in created.stdout, created.stdout + created.stderr
        classpath = traffic_classes(tmp_path)
        acked, failed = [], []
        sender = traffic(classpath, "send", namesrv, TOPIC, "400", "10")
        for line in sender.stdout:
            tally(line, acked, failed)
            if len(acked) >= 200:
                break
        master.process.kill()
        killed_at = time.time()
        for line in sender.stdout:
            tally(line, acked, failed)
        sender.wait(120)
        print("%d acknowledged, %d failed around the kill" % (len(acked), len(failed)))

        wait_for(lambda: told(events_file, 1, killed_at) is not None, 30, "the name server telling the slave (905)")
        record = told(events_file, 1, killed_at)
        seconds = record["ts"] / 1000.0 - killed_at
        print("the slave was told %.3f s after kill -9 of the master (one scan: %.0f s)" % (seconds, SCAN_SECONDS))
        # told when the master's connection closed, not at a later expiry scan
        assert unregistered(events_file, master_port)["reason"] == "channel_closed"
        assert record["notified"] == ["127.0.0.1:%d" % slave_port]
        assert record["offlineBrokerAddr"] == "127.0.0.1:%d" % master_port
        acting = "Min broker changed, old: 0-127.0.0.1:%d, new 1-127.0.0.1:%d" % (master_port, slave_port)
        wait_for(lambda: acting in slave.log() or "old: 0-null, new 1-127.0.0.1:%d" % slave_port in slave.log(), 30,
                 "the slave acting on 905")
        assert "ScheduleServiceStatus changed to true" in slave.log()      # it runs the master's timers now

        # acting master: routed as the group's brokerId 0 (read-only), and everything acknowledged is there
        assert topic_route_master(server.port) == "127.0.0.1:%d" % slave_port
        lost = set(acked) - stored_keys(classpath, namesrv, TOPIC)
        assert lost == set(), "acknowledged messages lost: %s" % sorted(lost)

        restarted_at = time.time()
        back = group_member(tmp_path, "broker-a", 0, namesrv, master_port).start()
        brokers.append(back)
        wait_for(lambda: told(events_file, 0, restarted_at) is not None, 180, "the slave told the master is back")
        wait_for(lambda: "new 0-127.0.0.1:%d" % master_port in slave.log(), 30, "the slave acting on it")
        wait_for(lambda: routed_master(server.port) == "127.0.0.1:%d" % master_port, 60, "the master routed again")
        lost = set(acked) - stored_keys(classpath, namesrv, TOPIC)
        assert lost == set(), "acknowledged messages lost after the master came back: %s" % sorted(lost)
    finally:
        for broker in brokers:
            broker.stop()
        server.stop()
