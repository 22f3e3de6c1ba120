"""A real Java 5.3.3 broker and mqadmin reach `twistd namesrv` through Debian's HAProxy, with PROXY v1 and v2.

HAProxy connects from 127.0.0.3 and ``brokerAllowedAddresses`` lists only 127.0.0.1, the broker's
own address, which reaches the server in the header alone: the broker registers only if the header's
address is the one checked. With a read worker, as the server runs on two CPUs: the broker's
connection is accepted by the worker, which reads the header and hands the socket to the main process.
Needs $JAVAPEER5 (docs/development.md) and HAProxy; skips without either.
"""

import pytest

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.integration.haproxy import HAProxy, haproxy_binary
from tests.integration.workers import WORKERS
from tests.javapeers import JavaBroker, mqadmin, peer, wait_for


def cluster_info(server):
    try:
        with server.client() as client:
            answer = client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
    except OSError:
        return b""
    return answer.body or b"" if answer.code == ResponseCode.SUCCESS else b""


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_java_broker_and_mqadmin_behind_haproxy(version, make_namesrv, tmp_path):
    peer("5.3.3")
    haproxy_binary()
    server = make_namesrv(dict(WORKERS, proxyProtocolEnable="true", proxyProtocolTrustedAddresses="127.0.0.3",
                               brokerAllowedAddresses="127.0.0.1"))
    proxy = HAProxy(tmp_path, {version: (server.port, version)})
    name = "broker-haproxy-" + version
    address = "127.0.0.1:%d" % proxy.ports[version]
    broker = JavaBroker("5.3.3", tmp_path / "broker", name, "ProxiedCluster",
                        properties={"namesrvAddr": address, "registerNameServerPeriod": "10000"})
    try:
        server.start()
        proxy.start()
        broker.start()
        wait_for(lambda: name.encode() in cluster_info(server), 120,
                 "the broker registered through HAProxy (%s)\n%s\n%s" % (version, broker.log()[-3000:],
                                                                         server.log()[-3000:]))
        listed = mqadmin("5.3.3", "clusterList", "-n", address, home=str(tmp_path / "admin"))
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert name in listed.stdout and "ProxiedCluster" in listed.stdout
        route = mqadmin("5.3.3", "topicRoute", "-n", address, "-t", "TBW102", home=str(tmp_path / "admin"))
        assert route.returncode == 0 and name in route.stdout, route.stdout + route.stderr
        assert "REGISTER_BROKER (103) from" not in server.log()   # never refused
        assert "closing 127.0.0." not in server.log()              # no header refused
    finally:
        broker.stop()
        proxy.stop()
