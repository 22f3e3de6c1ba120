"""A 5.3.3 broker group of two in controller mode, for the tests that fail it over: its brokers, a producer and a
reader (tools/faultlab/java/Traffic.java, ours, compiled against the peer's jars at test time), and what the
controllers and brokers answer about it. Probes and clients sign with ``credentials`` when a test gives them (name
servers and controllers with aclEnable=true)."""

import time

from namesrv.client import ask, routed_master
from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode
from tests.javapeers import JavaBroker, free_broker_port, mqadmin, tally, traffic, traffic_classes, wait_for

CLUSTER = "ClusterJ"


def broker_properties(namesrv, controllers):
    return {"namesrvAddr": namesrv, "enableControllerMode": "true", "controllerAddr": controllers,
            "brokerId": "-1", "allAckInSyncStateSet": "true", "syncBrokerMetadataPeriod": "2000",
            "checkSyncStateSetPeriod": "2000", "syncControllerMetadataPeriod": "2000"}


def replica_info(controller_port, credentials=None):
    """broker-a's replica info (1004) from ``controller_port``: (answer, SyncStateSet body), or (None, None)."""
    answer = ask(controller_port, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"},
                 credentials=credentials)
    return answer, (loads(answer.body) if answer is not None and answer.body else None)


def in_sync_count(controller_port, credentials=None):
    answer, body = replica_info(controller_port, credentials)
    return len(body["syncStateSet"]) if answer is not None and answer.code == 0 and body else 0


def two_brokers(tmp_path, namesrv, controllers, extra=None, classpath=()):
    first = free_broker_port()
    brokers = []
    for index, port in enumerate((first, free_broker_port(low=first + 20))):
        brokers.append(JavaBroker("5.3.3", tmp_path / ("b%d" % (index + 1)), "broker-a", CLUSTER,
                                  dict(broker_properties(namesrv, controllers), **(extra or {})), port=port,
                                  classpath=classpath).start())
    return brokers


def kill_master_while_sending(tmp_path, brokers, namesrv_ports, also_kill=(), credentials=None):
    """Send, kill -9 the master (and the processes in ``also_kill``) mid-way, wait for the survivor to be
    routed by the name server on ``namesrv_ports[-1]``; returns (seconds to routed, acked keys, failed keys,
    the killed broker, the survivor, the traffic classpath). ``credentials``: the producer and the probes
    sign with them (a name server with aclEnable=true)."""
    classpath = traffic_classes(tmp_path)
    namesrv = ";".join("127.0.0.1:%d" % p for p in namesrv_ports)
    master_address = routed_master(namesrv_ports[0], credentials=credentials)
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
    sender = traffic(classpath, "send", namesrv, "FailoverTopic", "300", "20", credentials=credentials)
    acked, failed = [], []
    while len(acked) < 60:
        line = sender.stdout.readline()
        assert line, "the producer stopped before the kill"
        tally(line, acked, failed)
    for process in (master.process, *also_kill):
        process.kill()
    killed_at = time.monotonic()
    survivor_address = "127.0.0.1:%d" % survivor.port
    survivor_port = namesrv_ports[-1]
    while routed_master(survivor_port, credentials=credentials) != survivor_address:
        assert time.monotonic() - killed_at < 60, "the survivor was not routed as master within 60 s"
        time.sleep(0.01)
    routed_after = time.monotonic() - killed_at
    for line in sender.stdout:
        tally(line, acked, failed)
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


def serving_epoch(controller_ports_, credentials=None):
    """broker-a's master epoch as the serving leader among ``controller_ports_`` answers it, or None."""
    for port in controller_ports_:
        answer, _ = replica_info(port, credentials)
        if answer is not None and answer.code == 0:
            return int(answer.ext["masterEpoch"])
    return None
