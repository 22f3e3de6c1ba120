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


def port_of(svc):
    return svc.port.getHost().port


@pytest_twisted.inlineCallbacks
def test_expired_broker_is_removed_and_its_connection_closed(started):
    clock = task.Clock()
    svc = started(clock)
    broker = yield connect(reactor, "127.0.0.1", port_of(svc))
    answer = yield broker.call(register_request("C", "b1", "127.0.0.1:10911", topics=["T1", "T2"]))
    assert answer.code == ResponseCode.SUCCESS
    client = yield connect(reactor, "127.0.0.1", port_of(svc))
    route = yield client.call(route_request("T1"))
    assert route.code == ResponseCode.SUCCESS
    clock.advance(119)
    svc.housekeeping.scan_not_active_brokers()
    route = yield client.call(route_request("T1"))
    assert route.code == ResponseCode.SUCCESS
    clock.advance(2)
    svc.housekeeping.scan_not_active_brokers()
    yield broker.closed
    route = yield client.call(route_request("T1"))
    assert route.code == ResponseCode.TOPIC_NOT_EXIST
    client.transport.loseConnection()


@pytest_twisted.inlineCallbacks
def test_client_connection_closing_does_not_touch_routes(started):
    svc = started()
    broker = yield connect(reactor, "127.0.0.1", port_of(svc))
    yield broker.call(register_request("C", "b1", "127.0.0.1:10911", topics=["T1", "T2"]))
    admin = yield connect(reactor, "127.0.0.1", port_of(svc))
    yield admin.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO))
    admin.transport.loseConnection()
    yield admin.closed
    client = yield connect(reactor, "127.0.0.1", port_of(svc))
    route = yield client.call(route_request("T1"))
    assert route.code == ResponseCode.SUCCESS
    broker.transport.loseConnection()
    yield broker.closed
    for _ in range(50):
        route = yield client.call(route_request("T1"))
        if route.code == ResponseCode.TOPIC_NOT_EXIST:
            break
    assert route.code == ResponseCode.TOPIC_NOT_EXIST
    client.transport.loseConnection()


@pytest_twisted.inlineCallbacks
def test_warm_restart_serves_routes_then_expires_brokers_that_never_return(started, tmp_path):
    clock = task.Clock()
    svc = started(clock)
    broker = yield connect(reactor, "127.0.0.1", port_of(svc))
    yield broker.call(register_request("C", "b1", "127.0.0.1:10911", topics=["Warm", "Warm2"]))
    yield svc.stopService()
    clock2 = task.Clock()
    svc2 = started(clock2)
    client = yield connect(reactor, "127.0.0.1", port_of(svc2))
    route = yield client.call(route_request("Warm"))
    assert route.code == ResponseCode.SUCCESS
    assert json.loads(route.body)["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}
    clock2.advance(121)
    svc2.housekeeping.scan_not_active_brokers()
    route = yield client.call(route_request("Warm"))
    assert route.code == ResponseCode.TOPIC_NOT_EXIST
    client.transport.loseConnection()


@pytest_twisted.inlineCallbacks
def test_scan_interval_change_applies_live(started):
    svc = started()
    client = yield connect(reactor, "127.0.0.1", port_of(svc))
    update = make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"scanNotActiveBrokerInterval=3000\n")
    answer = yield client.call(update)
    assert answer.code == ResponseCode.SUCCESS
    assert svc.config.scanNotActiveBrokerInterval == 3000
    client.transport.loseConnection()
