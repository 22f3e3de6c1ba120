"""Refusals are logged once per peer and kind, with their remark, and never flood the log."""

from twisted.logger import Logger, formatEvent

from namesrv.dispatch.refusals import RefusalLog
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.brokers import register_request
from tests.fakes import FakeConnection as Connection
from tests.processors.world import world  # noqa: F401 (a fixture)


def capture():
    events = []
    return Logger(observer=events.append), events


def test_each_kind_of_refusal_is_logged_once_per_peer_host(world):
    logger, events = capture()
    registry = ProcessorRegistry([world.processor], events=world.context.events, refusals=RefusalLog(logger))
    single = register_request("C", "broker-a", "127.0.0.1:10911", topics=["Only"])
    for port in (40001, 40002, 40003):      # one broker host, reconnecting
        answer = registry.dispatch(single, Connection("127.0.0.1:%d" % port))
        assert answer.code == ResponseCode.SYSTEM_ERROR
    registry.dispatch(single, Connection("127.0.0.2:40001"))
    registry.dispatch(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"}), Connection("127.0.0.2:1"))
    lines = [formatEvent(e) for e in events]
    assert len(lines) == 3
    assert lines[0].startswith("127.0.0.1:40001 got SYSTEM_ERROR to REGISTER_BROKER: register broker failed: broker "
                               "broker-a id 0 at 127.0.0.1:10911 is not registered here and sent a registration "
                               "with a single topic")
    assert lines[1].startswith("127.0.0.2:40001 got SYSTEM_ERROR to REGISTER_BROKER")
    assert lines[2].startswith("127.0.0.2:1 got TOPIC_NOT_EXIST to GET_ROUTEINFO_BY_TOPIC: No topic route info")


def test_a_storm_of_new_peers_is_rate_limited():
    logger, events = capture()
    now = [0.0]
    refusals = RefusalLog(logger, limit=5, window=10.0, clock=lambda: now[0])
    request = make_request(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "k"})
    response = request.make_response(ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: n Key: k")
    for host in range(1000):
        refusals.note(request, response, "127.0.%d.%d:1" % (host // 250, host % 250))
    assert len(events) == 5
    now[0] = 11.0
    refusals.note(request, response, "127.1.0.1:1")
    assert "995 more such warnings were left out" in formatEvent(events[5]) and len(events) == 7
