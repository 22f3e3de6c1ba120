"""The whole service in-process: real listening port on 127.0.0.1, task.Clock for liveness."""

import json

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from namesrv.client import connect
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.service import make_service
from tests.brokers import register_request, route_request
from tests.config_for import service_config


@pytest.fixture
def started(tmp_path):
    services = []

    def start(clock=None, **extra):
        svc = make_service(service_config(tmp_path, **extra), clock=clock or task.Clock())
        svc.startService()
        services.append(svc)
        return svc

    yield start
    for svc in services:
        if svc.running:
            svc.stopService()


def client_of(svc):
    """A client connected to ``svc``'s remoting port (a Deferred)."""
    return connect(reactor, "127.0.0.1", svc.port.getHost().port)


@defer.inlineCallbacks
def registered_broker(svc, topics):
    """A broker connected to ``svc`` that has registered b1 (cluster C, 127.0.0.1:10911) with ``topics``."""
    broker = yield client_of(svc)
    answer = yield broker.call(register_request("C", "b1", "127.0.0.1:10911", topics=topics))
    assert answer.code == ResponseCode.SUCCESS
    return broker


@defer.inlineCallbacks
def route_code(client, topic):
    """The code of the answer to ``client``'s route read of ``topic``."""
    route = yield client.call(route_request(topic))
    return route.code


@pytest_twisted.inlineCallbacks
def test_expired_broker_is_removed_and_its_connection_closed(started):
    clock = task.Clock()
    svc = started(clock)
    broker = yield registered_broker(svc, ["T1", "T2"])
    client = yield client_of(svc)
    assert (yield route_code(client, "T1")) == ResponseCode.SUCCESS
    clock.advance(119)
    svc.housekeeping.scan_not_active_brokers()
    assert (yield route_code(client, "T1")) == ResponseCode.SUCCESS
    clock.advance(2)
    svc.housekeeping.scan_not_active_brokers()
    yield broker.closed
    assert (yield route_code(client, "T1")) == ResponseCode.TOPIC_NOT_EXIST
    client.transport.loseConnection()


@pytest_twisted.inlineCallbacks
def test_client_connection_closing_does_not_touch_routes(started):
    svc = started()
    broker = yield registered_broker(svc, ["T1", "T2"])
    admin = yield client_of(svc)
    yield admin.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
    admin.transport.loseConnection()
    yield admin.closed
    client = yield client_of(svc)
    assert (yield route_code(client, "T1")) == ResponseCode.SUCCESS
    broker.transport.loseConnection()
    yield broker.closed
    for _ in range(50):
        code = yield route_code(client, "T1")
        if code == ResponseCode.TOPIC_NOT_EXIST:
            break
    assert code == ResponseCode.TOPIC_NOT_EXIST
    client.transport.loseConnection()


@pytest_twisted.inlineCallbacks
def test_warm_restart_serves_routes_then_expires_brokers_that_never_return(started, tmp_path):
    clock = task.Clock()
    svc = started(clock)
    yield registered_broker(svc, ["Warm", "Warm2"])
    yield svc.stopService()
    clock2 = task.Clock()
    svc2 = started(clock2)
    client = yield client_of(svc2)
    route = yield client.call(route_request("Warm"))
    assert route.code == ResponseCode.SUCCESS
    assert json.loads(route.body)["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}
    clock2.advance(121)
    svc2.housekeeping.scan_not_active_brokers()
    assert (yield route_code(client, "Warm")) == ResponseCode.TOPIC_NOT_EXIST
    client.transport.loseConnection()


@pytest_twisted.inlineCallbacks
def test_scan_interval_change_applies_live(started):
    svc = started()
    client = yield client_of(svc)
    update = make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"scanNotActiveBrokerInterval=3000\n")
    answer = yield client.call(update)
    assert answer.code == ResponseCode.SUCCESS
    assert svc.config.scanNotActiveBrokerInterval == 3000
    client.transport.loseConnection()
