"""Read workers with TLS and ACL, as operators run them: ``twistd namesrv``, real sockets on 127.0.0.1.

Exclusive mode puts every client connection on a worker, so what these tests see was done
by the worker: TLS terminated there, signatures checked there, certificates and the ACL
file reloaded there (its log lines reach the main log as ``[read-worker-0]``).
"""

import os
import re
import signal
import socket
import ssl
import time
import urllib.request

import pytest
from cryptography import x509

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.signature import sign_request_ext
from tests.brokers import register_request, route_request
from tests.integration.server import free_port
from tests.integration.workers import (
    WORKERS, answered_by_workers, reads_reach_the_workers, until_the_route_is_gone, wait_for_log)
from tests.security.certs import write_pair


class TlsClient(BlockingRemotingClient):
    """The blocking test client over TLS (trusting any certificate, as Java's test mode does)."""

    def __init__(self, port, timeout=10.0):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")

    def certificate(self):
        return x509.load_der_x509_certificate(self.sock.getpeercert(binary_form=True))


def tls_properties(tmp_path, mode, **extra):
    cert, key, leaf = write_pair(tmp_path)
    properties = dict(WORKERS, tlsMode=mode, tlsServerCertPath=cert, tlsServerKeyPath=key,
                      fileWatchIntervalMillis="100")
    properties.update(extra)
    return properties, leaf


def register_broker(client, name, addr, topics, counter=1):
    answer = client.call(register_request("DefaultCluster", name, addr, topics=topics, counter=counter))
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as response:
        return response.read().decode()


def wait_for_metric(port, line, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        text = scrape(port)
        if line in text:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.1)


# -- TLS ---------------------------------------------------------------------------------------
def test_permissive_worker_serves_tls_and_plain_clients_and_counts_them(make_namesrv, tmp_path):
    metrics_port = free_port()
    properties, leaf = tls_properties(tmp_path, "permissive", prometheusListenPort=str(metrics_port))
    server = make_namesrv(properties).start()
    broker = server.client()   # stays open: closing it would forget the broker
    register_broker(broker, "broker-a", "127.0.0.1:10911", ["Secure", "Other"])
    tls, plain = TlsClient(server.port), server.client()
    try:
        assert tls.certificate() == leaf
        for client in [tls, plain] * 60:
            route = client.call(route_request("Secure"))
            assert route.code == ResponseCode.SUCCESS and b"broker-a" in route.body
    finally:
        for client in (tls, plain, broker):
            client.close()
    # the worker's connection counts reach the main process's metrics
    text = wait_for_metric(metrics_port, 'rocketmq_namesrv_accepted_connections_total{kind="tls"} 1.0')
    # the broker, the plain client and the start-up probe (NamesrvProcess.start waits for an answer)
    assert 'rocketmq_namesrv_accepted_connections_total{kind="plain"} 3.0' in text, text
    # 120 reads; the few right after the registration may go to the main process while it publishes
    assert answered_by_workers(server) >= 100
    assert "1 broker connections handed over" in server.log()   # the plain broker's, as without TLS
    assert "Traceback" not in server.log()


def test_tls_and_plain_reads_are_answered_by_a_worker_sharing_the_port(make_namesrv, tmp_path):
    properties, _ = tls_properties(tmp_path, "permissive", routeReadWorkersExclusive="false")
    server = make_namesrv(properties).start()
    wait_for_log(server, "read worker 0 listening")
    clients = [TlsClient(server.port) for _ in range(12)] + [server.client() for _ in range(12)]
    # 24 connections on the one socket both processes accept from: the worker takes some
    reads_reach_the_workers(server, clients,
                            lambda client: register_broker(client, "broker-b", "127.0.0.1:10912", ["Shared", "Other"]))
    assert "Traceback" not in server.log()


def test_enforcing_worker_closes_plain_clients(make_namesrv, tmp_path):
    properties, _ = tls_properties(tmp_path, "enforcing")
    server = make_namesrv(properties).start()
    with TlsClient(server.port) as tls:
        assert tls.call(route_request("Nothing")).code == ResponseCode.TOPIC_NOT_EXIST
    with server.client() as plain:
        with pytest.raises(OSError):   # ConnectionError: closed without an answer
            plain.call(route_request("Nothing"))
    wait_for_log(server, "a plain connection while tlsMode=enforcing")
    assert "[read-worker-0]" in server.log().split("a plain connection while tlsMode=enforcing")[0].splitlines()[-1]


def test_a_certificate_replaced_on_disk_serves_new_connections_from_the_worker(make_namesrv, tmp_path):
    properties, first = tls_properties(tmp_path, "enforcing")
    server = make_namesrv(properties).start()
    with TlsClient(server.port) as client:
        assert client.certificate() == first
    _, _, second = write_pair(tmp_path)   # the same paths, a new pair
    wait_for_log(server, "[read-worker-0] info TLS certificate reloaded")
    with TlsClient(server.port) as client:
        assert client.certificate() == second
        assert client.call(route_request("Nothing")).code == ResponseCode.TOPIC_NOT_EXIST


def test_a_tls_broker_registers_through_a_worker_and_its_close_expires_its_routes(make_namesrv, tmp_path):
    properties, _ = tls_properties(tmp_path, "enforcing")
    server = make_namesrv(properties).start()
    broker = TlsClient(server.port)
    with TlsClient(server.port) as producer:
        register_broker(broker, "broker-c", "127.0.0.1:10913", ["Relayed", "Other"])
        register_broker(broker, "broker-c", "127.0.0.1:10913", ["Relayed", "Other"], counter=2)   # a heartbeat
        assert producer.call(route_request("Relayed")).code == ResponseCode.SUCCESS
        broker.close()
        until_the_route_is_gone(producer, "Relayed")
    server.stop(signal.SIGTERM)
    log = server.log()
    assert "0 broker connections handed over" in log   # relayed, not handed over
    assert re.search(r"broker 127.0.0.1:10913 \(broker-c\) removed: its connection 127.0.0.1:\d+ closed", log)


# -- ACL ---------------------------------------------------------------------------------------
ACL = """
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
"""

ACL_WITH_A_NEW_ACCOUNT = ACL + """
  - accessKey: newcomer1
    secretKey: abcdefgh
"""


def _signed(topic, access_key, secret_key):
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                        sign_request_ext({"topic": topic}, None, access_key, secret_key))


def test_signed_route_reads_are_checked_and_answered_by_the_worker(make_namesrv, tmp_path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    server = make_namesrv(dict(WORKERS, aclEnable="true", aclFile=str(acl), aclSignedClasses="routeRead,adminWrite",
                               fileWatchIntervalMillis="100")).start()
    with server.client() as broker, server.client() as client:
        register_broker(broker, "broker-d", "127.0.0.1:10914", ["Guarded", "Other"])
        for _ in range(50):
            assert client.call(_signed("Guarded", "rocketmq2", "12345678")).code == ResponseCode.SUCCESS
        wrong = client.call(_signed("Guarded", "rocketmq2", "87654321"))
        assert wrong.code == ResponseCode.NO_PERMISSION
        assert wrong.remark.startswith("Check signature failed for accessKey=rocketmq2")
        unsigned = client.call(route_request("Guarded"))
        assert unsigned.code == ResponseCode.NO_PERMISSION and "must be signed" in unsigned.remark
        unknown = client.call(_signed("Guarded", "newcomer1", "abcdefgh"))
        assert unknown.code == ResponseCode.NO_PERMISSION and unknown.remark.startswith("No acl config for newcomer1")

        acl.write_text(ACL_WITH_A_NEW_ACCOUNT)
        wait_for_log(server, "[read-worker-0] info ACL: %s changed, 2 account(s) loaded" % acl)
        welcome = client.call(_signed("Guarded", "newcomer1", "abcdefgh"))
        assert welcome.code == ResponseCode.SUCCESS and b"broker-d" in welcome.body
    # the worker answers signed reads itself: all 54, less the few right after the registration
    # (forwarded while the worker's replica catches up)
    assert answered_by_workers(server) >= 48


def test_a_killed_tls_worker_is_replaced_and_its_tls_brokers_are_forgotten(make_namesrv, tmp_path):
    """A TLS broker's session died with its worker: the main process runs the housekeeping of its
    forwarded connection, and the replacement worker serves TLS again (the broker would re-register)."""
    properties, _ = tls_properties(tmp_path, "enforcing")
    server = make_namesrv(properties).start()
    broker = TlsClient(server.port)
    try:
        register_broker(broker, "broker-e", "127.0.0.1:10915", ["Lost", "Other"])
        children = open("/proc/%d/task/%d/children" % (server.process.pid, server.process.pid)).read().split()
        os.kill(int(children[0]), signal.SIGKILL)
        wait_for_log(server, "route read worker 0 exited")
        wait_for_log(server, "broker 127.0.0.1:10915 (broker-e) removed: its connection")
        deadline = time.monotonic() + 30
        while server.log().count("read worker 0 listening") < 2:
            assert time.monotonic() < deadline, server.log()[-3000:]
            time.sleep(0.05)
        with TlsClient(server.port) as producer:
            assert producer.call(route_request("Lost")).code == ResponseCode.TOPIC_NOT_EXIST
            register_broker(producer, "broker-e", "127.0.0.1:10915", ["Lost", "Other"], counter=2)
            assert producer.call(route_request("Lost")).code == ResponseCode.SUCCESS
    finally:
        broker.close()
