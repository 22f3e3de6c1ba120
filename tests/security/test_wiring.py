"""The guards, TLS and metrics as make_service wires them, end to end: real ports on 127.0.0.1, a signed admin write, TLS and a Prometheus scrape."""


import pytest
import pytest_twisted
from twisted.internet import defer, reactor
from twisted.internet.endpoints import SSL4ClientEndpoint, TCP4ClientEndpoint, connectProtocol
from twisted.web.client import Agent, readBody

from namesrv.client import RemotingClientProtocol
from namesrv.dispatch.inflight import InFlightDispatcher
from namesrv.dispatch.isolation import ClassLimitPolicy, PriorityDispatcher
from namesrv.protocol.codes import RequestCode, ResponseCode, SerializeType
from namesrv.protocol.command import make_request
from namesrv.security.acl import BrokerAllowListPolicy
from namesrv.security.trust import TrustPolicy
from namesrv.security.aclfile import AclFileError
from namesrv.security.signature import sign_request_ext
from namesrv.security.wiring import resolve_acl_path
from namesrv.server.tlsmode import TlsSniffingFactory
from tests.config_for import make_config
from tests.security import fakes
from tests.security.certs import write_pair, client_options
from tests.integration.server import free_port


ACL = """
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
"""


def test_defaults_install_isolation_and_allow_list_only():
    svc = fakes.service(reactor)
    assert svc.listen_factory is svc.factory and svc.tls is None and svc.metrics is None
    assert [type(p) for p in svc.registry.policies] == [BrokerAllowListPolicy, ClassLimitPolicy]
    assert isinstance(svc.factory.dispatcher, InFlightDispatcher)
    assert isinstance(svc.chain.priority, PriorityDispatcher) and svc.acl is None


def test_acl_on_without_a_usable_file_refuses_to_start(tmp_path):
    with pytest.raises(AclFileError):
        fakes.service(reactor, aclEnable=True, aclFile=str(tmp_path / "missing.yml"))


def test_acl_path_is_relative_to_rocketmq_home():
    assert resolve_acl_path(make_config(rocketmqHome="/opt/rmq")) == "/opt/rmq/conf/plain_acl.yml"
    assert resolve_acl_path(make_config(aclFile="/etc/acl.yml", rocketmqHome="/opt/rmq")) == "/etc/acl.yml"
    assert resolve_acl_path(make_config()) == "conf/plain_acl.yml"


@pytest.fixture
def running(tmp_path):
    started = []

    def start(**values):
        svc = fakes.service(reactor, **values)
        svc.children = [c for c in (svc.acl, svc.tls, svc.metrics) if c is not None]
        for child in svc.children:
            child.startService()
        svc.port = reactor.listenTCP(0, svc.listen_factory, interface="127.0.0.1")
        started.append(svc)
        return svc

    yield start
    for svc in started:
        svc.port.stopListening()
        svc.factory.close_all()
        for child in reversed(svc.children):
            child.stopService()


def connect(svc):
    return connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", svc.port.getHost().port), RemotingClientProtocol())


@pytest_twisted.inlineCallbacks
def test_admin_write_needs_the_right_credentials_over_the_wire(running, tmp_path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    svc = running(aclEnable=True, aclFile=str(acl), aclSignedClasses="adminWrite")
    assert any(isinstance(p, TrustPolicy) for p in svc.registry.policies)
    client = yield connect(svc)
    put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA", "value": "broker-a:4"}
    for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
        signed = yield client.call(make_request(RequestCode.PUT_KV_CONFIG,
                                                sign_request_ext(put, None, "rocketmq2", "12345678"),
                                                serialize_type=serialize_type))
        assert signed.code == ResponseCode.SUCCESS
    unsigned = yield client.call(make_request(RequestCode.PUT_KV_CONFIG, put))
    assert unsigned.code == ResponseCode.NO_PERMISSION and "must be signed" in unsigned.remark
    wrong = yield client.call(make_request(RequestCode.PUT_KV_CONFIG, sign_request_ext(put, None, "rocketmq2", "87654321")))
    assert wrong.code == ResponseCode.NO_PERMISSION
    assert wrong.remark.startswith("Check signature failed for accessKey=rocketmq2: request code 100 (PUT_KV_CONFIG)")
    route = yield client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}))
    assert route.code == ResponseCode.SUCCESS
    assert svc.processor.seen.count(RequestCode.PUT_KV_CONFIG) == 2
    client.transport.loseConnection()
    yield client.closed


@pytest_twisted.inlineCallbacks
def test_everything_on_tls_acl_and_a_prometheus_scrape(running, tmp_path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL)
    cert, key, leaf = write_pair(tmp_path)
    metrics_port = free_port()
    svc = running(aclEnable=True, aclFile=str(acl), aclSignedClasses="adminWrite", tlsMode="permissive",
                  tlsServerCertPath=cert,
                  tlsServerKeyPath=key, prometheusListenPort=metrics_port)
    assert isinstance(svc.port.factory, TlsSniffingFactory)
    number = svc.port.getHost().port
    tls_client = yield connectProtocol(SSL4ClientEndpoint(reactor, "127.0.0.1", number, client_options(leaf)),
                                       RemotingClientProtocol())
    plain_client = yield connect(svc)
    for client in (tls_client, plain_client):
        answer = yield client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}))
        assert answer.code == ResponseCode.SUCCESS
    refused = yield plain_client.call(make_request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "b"}))
    assert refused.code == ResponseCode.NO_PERMISSION
    svc.events.emit("broker_expired", brokerAddr="1.1.1.1:10911")
    svc.events.emit("bad_frame", peer="x", reason="y")

    response = yield Agent(reactor).request(b"GET", b"http://127.0.0.1:%d/metrics" % metrics_port)
    assert response.code == 200
    text = (yield readBody(response)).decode()
    expected = [
        'rocketmq_namesrv_requests_total{code="105",name="GET_ROUTEINFO_BY_TOPIC",request_class="route_read",'
        'response_code="0"} 2.0',
        'rocketmq_namesrv_requests_total{code="205",name="WIPE_WRITE_PERM_OF_BROKER",request_class="admin_write",'
        'response_code="16"} 1.0',
        'rocketmq_namesrv_rejected_requests_total{reason="acl_unsigned",request_class="admin_write"} 1.0',
        'rocketmq_namesrv_request_duration_seconds_count{request_class="route_read"} 2.0',
        "rocketmq_namesrv_active_brokers 1.0",
        "rocketmq_namesrv_topics 2.0",
        "rocketmq_namesrv_clusters 1.0",
        "rocketmq_namesrv_connections 2.0",
        "rocketmq_namesrv_broker_expirations_total 1.0",
        "rocketmq_namesrv_bad_frames_total 1.0",
        'rocketmq_namesrv_accepted_connections_total{kind="tls"} 1.0',
        'rocketmq_namesrv_accepted_connections_total{kind="plain"} 1.0',
        'rocketmq_namesrv_in_flight_requests{request_class="broker_control"} 0.0',
        'rocketmq_namesrv_acl_accounts 1.0',
    ]
    missing = [line for line in expected if line not in text]
    assert not missing, text
    for client in (tls_client, plain_client):
        client.transport.loseConnection()
    yield defer.DeferredList([tls_client.closed, plain_client.closed])
