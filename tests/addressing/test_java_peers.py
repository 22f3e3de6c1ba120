"""Real Java 4.9.8 and 5.3.3 brokers and mqadmin, started with no name server address, find ours through the
address service (``-Drocketmq.namesrv.domain=127.0.0.1:HTTP``); a real Java NameServer is probed like ours.

They need Apache RocketMQ 4.9.8 and 5.3.3 installations ($JAVAPEER, $JAVAPEER5: docs/development.md)
and skip, saying so, without them.
A Java broker asks the address service 10 s after start, then every 2 minutes (4.9.8) or every
``fetchNamesrvAddrInterval`` (5.3.3, 10 s), and registers every ``registerNameServerPeriod`` (set to its
floor, 10 s, here, so the tests wait for one period less).
"""

import os
import signal
import subprocess
import time

import pytest

from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from tests.addressing.test_live import fetch, served_until
from tests.integration.server import NamesrvProcess, free_port
from tests.javapeers import JavaBroker, mqadmin, peer, wait_for

VERSIONS = ["4.9.8", "5.3.3"]


def knows_broker(server, name):
    try:
        with server.client() as client:
            answer = client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
    except OSError:
        return False
    return ('"%s"' % name).encode() in (answer.body or b"")


@pytest.fixture
def fleet(tmp_path):
    """Two of our name servers; the first serves the address list of both on ``http``."""
    http, a_port, b_port = free_port(), free_port(), free_port()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    b = NamesrvProcess(tmp_path / "b", {"routeReadWorkers": "0"}, port=b_port)
    a = NamesrvProcess(tmp_path / "a", {"routeReadWorkers": "0", "prometheusListenPort": str(http),
                                        "addressServiceNamesrvAddr": "127.0.0.1:%d;127.0.0.1:%d" % (a_port, b_port)},
                       port=a_port)
    started = [b.start(), a.start()]
    yield a, b, http
    for server in started:
        server.stop()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_java_broker_with_no_namesrv_addr_registers_with_every_listed_name_server(version, fleet, tmp_path):
    peer(version)
    a, b, http = fleet
    domain = "127.0.0.1:%d" % http
    name = "broker-addr-" + version.replace(".", "")
    # the domain as a JVM property (4.9.8) or as the broker's own property (5.3.3): both are read
    properties = {"fetchNamesrvAddrByAddressServer": "true", "registerNameServerPeriod": "10000"}
    jvm_properties = {}
    if version == "4.9.8":
        jvm_properties["rocketmq.namesrv.domain"] = domain
    else:
        properties["rmqAddressServerDomain"] = domain
    broker = JavaBroker(version, tmp_path / "broker", name, "AddrCluster", properties=properties,
                        jvm_properties=jvm_properties).start()
    try:
        assert "namesrvAddr" not in open(broker.config_file).read()
        wait_for(lambda: knows_broker(a, name) and knows_broker(b, name), 150,
                 "%s broker registered with both name servers\n%s" % (version, broker.log()[-3000:]))

        # mqadmin with only the domain property lists the cluster
        admin = mqadmin(version, "clusterList", jvm_properties={"rocketmq.namesrv.domain": domain},
                        home=str(tmp_path / "admin"))
        assert admin.returncode == 0, admin.stdout + admin.stderr
        assert name in admin.stdout and "AddrCluster" in admin.stdout

        # one name server killed: the served list drops it
        b.stop(signal.SIGKILL)
        assert served_until("http://%s/rocketmq/nsaddr" % domain, "127.0.0.1:%d" % a.port) == "127.0.0.1:%d" % a.port
        if version == "5.3.3":   # asks every 10 s (4.9.8: every 2 minutes)
            killed = time.monotonic()
            wait_for(lambda: "new: 127.0.0.1:%d\n" % a.port in broker.log(), 60,
                     "5.3.3 broker took the new list\n" + broker.log()[-3000:])
            print("5.3.3 broker took the list without the killed name server %.1f s after the kill"
                  % (time.monotonic() - killed))
    finally:
        broker.stop()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_java_namesrv_in_the_list_is_probed_and_leaves_when_killed(version, tmp_path):
    """The probe (GET_NAMESRV_CONFIG) is answered by a Java NameServer as by ours."""
    home = peer(version)
    java_port, http, our_port = free_port(), free_port(), free_port()
    java = subprocess.Popen(["bash", os.path.join(home, "namesrv.sh"), str(java_port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, HOME=str(tmp_path)))
    ours = None
    try:
        wait_for(lambda: _config_answered(java_port), 60, "the Java %s NameServer answers" % version)
        both = "127.0.0.1:%d;127.0.0.1:%d" % (our_port, java_port)
        ours = NamesrvProcess(tmp_path, {"routeReadWorkers": "0", "prometheusListenPort": str(http),
                                         "addressServiceNamesrvAddr": both}, port=our_port).start()
        metrics = "http://127.0.0.1:%d/metrics" % http
        answered = 'probes_total{namesrv="127.0.0.1:%d",result="answered"} ' % java_port
        wait_for(lambda: answered in fetch(metrics)[1] and answered + "0.0" not in fetch(metrics)[1], 30,
                 "a probe of the Java %s NameServer answered" % version)
        url = "http://127.0.0.1:%d/rocketmq/nsaddr" % http
        assert fetch(url) == (200, both + "\n")
        java.kill()
        java.wait()
        assert served_until(url, "127.0.0.1:%d" % our_port) == "127.0.0.1:%d" % our_port
        assert "name server 127.0.0.1:%d left the address list" % java_port in ours.log()
    finally:
        if java.poll() is None:
            java.kill()
            java.wait()
        if ours is not None:
            ours.stop()


def _config_answered(port):
    from namesrv.client import BlockingRemotingClient
    try:
        with BlockingRemotingClient("127.0.0.1", port, timeout=5) as client:
            return client.call(make_request(RequestCode.GET_NAMESRV_CONFIG)).code == 0
    except OSError:
        return False
