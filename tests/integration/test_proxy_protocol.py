"""Brokers and clients behind Debian's real HAProxy (send-proxy, send-proxy-v2): `twistd namesrv` on 127.0.0.1.

HAProxy connects from 127.0.0.3 (the only trusted address); the test clients connect to it from
127.0.0.2 (allowed as a broker, white-listed by the ACL) or 127.0.0.4 (neither). Every check passing
for 127.0.0.2 and failing for 127.0.0.4 shows the header's address is what the server checked: both
arrive from the proxy's 127.0.0.3. Skips without HAProxy (``apt-get install -y haproxy``).
"""

import glob
import json
import re
import time
import urllib.request

import pytest

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests import proxyheaders
from tests.admin.cli import admin
from tests.brokers import register_request, route_request
from tests.integration.haproxy import HAProxy, SourcedClient, haproxy_binary
from tests.integration.server import free_port
from tests.integration.workers import WORKERS

BROKER_HOST, OTHER_HOST, PROXY_HOST = "127.0.0.2", "127.0.0.4", "127.0.0.3"
VERSIONS = ("v1", "v2")
ACL = """globalWhiteRemoteAddresses:
  - 127.0.0.2
accounts:
  - accessKey: adminUser
    secretKey: adminSecret1
    admin: true
"""


@pytest.fixture
def behind_haproxy(make_namesrv, tmp_path):
    """make(properties, controller=False): a started server and an HAProxy with a v1 and a v2 frontend to
    its remoting port (and to its controller port, ``c1``/``c2``, with ``controller``)."""
    haproxy_binary()
    proxies = []

    def make(properties=None, controller=False):
        props = {"proxyProtocolEnable": "true", "proxyProtocolTrustedAddresses": PROXY_HOST,
                 "prometheusListenPort": str(free_port()), "routeReadWorkers": "0"}
        if controller:
            controller_port = free_port()
            props.update(enableControllerInNamesrv="true", controllerDLegerGroup="g",
                         controllerDLegerPeers="n0-127.0.0.1:%d" % controller_port, controllerDLegerSelfId="n0",
                         controllerStorePath=str(tmp_path / "controller"))
        props.update(properties or {})
        server = make_namesrv(props)
        frontends = {"v1": (server.port, "v1"), "v2": (server.port, "v2")}
        if controller:
            server.controller_port = controller_port
            frontends.update(c1=(controller_port, "v1"), c2=(controller_port, "v2"))
        # HAProxy's health checks reach the server from its first start: it must serve them
        proxy = HAProxy(tmp_path, frontends)
        proxies.append(proxy)
        server.start()
        proxy.start()
        server.metrics_port = int(props["prometheusListenPort"])
        return server, proxy

    yield make
    for proxy in proxies:
        proxy.stop()


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as response:
        return response.read().decode()


def proxy_counts(server, port="namesrv"):
    counts = {}
    for kind, value in re.findall(r'proxy_protocol_connections_total\{kind="(\w+)",port="%s"\} (\S+)' % port,
                                  scrape(server.metrics_port)):
        counts[kind] = float(value)
    return counts


def wait_until(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def closed_without_answer(client, request):
    """True when the server closes the connection instead of answering ``request``."""
    try:
        client.call(request)
    except (ConnectionError, EOFError, OSError):
        return True
    finally:
        client.close()
    return False


def ended(client):
    """The server closed (or reset) the connection before it answered anything."""
    try:
        return client.sock.recv(1) == b""
    except ConnectionResetError:
        return True
    finally:
        client.close()


def events(server):
    (path,) = glob.glob(server.workdir + "/logs/namesrv-events*.log")
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("workers", [0, 1], ids=["one process", "read worker"])
def test_brokers_and_clients_behind_haproxy_are_known_by_the_headers_address(behind_haproxy, workers):
    status_port = free_port()
    properties = {"brokerAllowedAddresses": BROKER_HOST, "statusListenPort": str(status_port)}
    if workers:
        properties.update(WORKERS)
    server, proxy = behind_haproxy(properties)
    brokers = []
    for version in VERSIONS:
        # a broker behind the proxy registers: its header says 127.0.0.2, the socket says 127.0.0.3
        broker = proxy.client(version, connect_from=BROKER_HOST)
        brokers.append(broker)
        answer = broker.call(register_request("C", "broker-" + version, "127.0.0.2:10911", topics=["T-" + version, "U-" + version]))
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        # another host behind the same proxy may read routes, but not register
        with proxy.client(version, connect_from=OTHER_HOST) as other:
            refused = other.call(register_request("C", "intruder", "127.0.0.4:10911", topics=["Evil", "Evil2"]))
            assert refused.code == ResponseCode.NO_PERMISSION
            assert "from %s refused" % OTHER_HOST in refused.remark
            route = other.call(route_request("T-" + version))
            assert route.code == ResponseCode.SUCCESS and b"broker-" + version.encode() in route.body
        # namesrv-admin through the proxy
        status, out, err = admin("-n", "127.0.0.1:%d" % proxy.ports[version], "topicRoute", "-t", "T-" + version)
        assert status == 0 and "broker-" + version in out, err

    # Java 5.1.4+ believes anyone's header: here a forged one is refused, and so is the proxy without one
    forged = SourcedClient(server.port, OTHER_HOST)
    forged.sock.sendall(proxyheaders.v2((BROKER_HOST, 1234)))
    assert closed_without_answer(forged, register_request("C", "forged", "127.0.0.4:10911", topics=["Evil", "Evil2"]))
    assert closed_without_answer(SourcedClient(server.port, PROXY_HOST), route_request("T-v1"))
    # a client that reaches the port itself is served with its own address, as without the option
    with SourcedClient(server.port, BROKER_HOST) as direct:
        assert direct.call(route_request("T-v2")).code == ResponseCode.SUCCESS
    with SourcedClient(server.port, OTHER_HOST) as direct:
        assert direct.call(register_request("C", "direct", "127.0.0.4:10911", topics=["D1", "D2"])).code == ResponseCode.NO_PERMISSION

    # the broker's connection closes: the event log and the status page name the header's address
    for broker in brokers:
        broker.close()
    closes = wait_until(lambda: [e for e in events(server) if e["event"] == "channel_closed" and e.get("brokerAddr")],
                        "two channel_closed events")
    assert {e["peer"].rpartition(":")[0] for e in closes} == {BROKER_HOST}
    with urllib.request.urlopen("http://127.0.0.1:%d/fragment/events" % status_port, timeout=10) as page:
        assert "peer=%s:" % BROKER_HOST in page.read().decode()

    # the metrics count what the headers said and what was refused (a worker's counts every second)
    counts = wait_until(lambda: (lambda c: c if c.get("untrusted") and c.get("missing") else None)(
        proxy_counts(server)), "proxy protocol counts")
    assert counts["v1"] >= 2 and counts["v2"] >= 2 and counts["direct"] >= 2
    # HAProxy's health checks (every 500 ms: a v1 header naming itself, a v2 LOCAL) were never refused
    assert counts["untrusted"] == 1 and counts["missing"] == 1 and counts["bad"] == 0 and counts["timeout"] == 0
    assert "closing %s" % OTHER_HOST in server.log() and "closing %s" % PROXY_HOST in server.log()


def test_an_acl_white_list_sees_the_headers_address_with_read_workers(behind_haproxy, tmp_path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    server, proxy = behind_haproxy(dict(WORKERS, aclEnable="true", aclFile=str(acl), aclSignedClasses="all"))
    for version in VERSIONS:
        with proxy.client(version, connect_from=BROKER_HOST) as white, \
                proxy.client(version, connect_from=OTHER_HOST) as other:
            # a route read (a worker answers it, after its own ACL check) and an admin read (forwarded
            # to the main process with the client's address)
            for request in (make_request(RequestCode.GET_BROKER_CLUSTER_INFO),
                            make_request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ORDER_TOPIC_CONFIG"})):
                assert white.call(request).code != ResponseCode.NO_PERMISSION
                refused = other.call(request)
                assert refused.code == ResponseCode.NO_PERMISSION, refused.remark


def test_the_controller_port_behind_haproxy(behind_haproxy):
    server, proxy = behind_haproxy(controller=True)
    for frontend in ("c1", "c2"):
        with proxy.client(frontend, connect_from=BROKER_HOST) as client:
            answer = client.call(make_request(RequestCode.CONTROLLER_GET_METADATA_INFO))
            assert answer.code == ResponseCode.SUCCESS and answer.ext.get("isLeader") == "true"
    forged = SourcedClient(server.controller_port, OTHER_HOST)
    forged.sock.sendall(proxyheaders.v1((BROKER_HOST, 1234)))
    assert closed_without_answer(forged, make_request(RequestCode.CONTROLLER_GET_METADATA_INFO))
    counts = wait_until(lambda: (lambda c: c if c.get("v1") and c.get("v2") else None)(
        proxy_counts(server, "controller")), "controller port counts")
    assert counts["untrusted"] == 1 and counts["bad"] == 0 and counts["missing"] == 0


def test_a_slow_or_oversized_header_from_the_proxy_address_is_closed(behind_haproxy):
    server, proxy = behind_haproxy()
    oversized = SourcedClient(server.port, PROXY_HOST)
    oversized.sock.sendall(proxyheaders.V2_SIGNATURE + b"\x21\x11\xff\xff")
    assert ended(oversized)                   # at once, without waiting for 64 KiB
    # half a header: closed by the header timeout (5 s), long before the idle timeout (120 s) or ours (60 s)
    slow = SourcedClient(server.port, PROXY_HOST, timeout=60)
    slow.sock.sendall(b"PROXY TCP4 127.0.0.2")
    assert ended(slow)
    counts = proxy_counts(server)
    assert counts["bad"] == 1 and counts["timeout"] == 1
