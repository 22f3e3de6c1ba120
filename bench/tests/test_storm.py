"""A small registration storm through the real route processor, scheduler on: every answer must be right.

The latency figure comes from ``python -m bench storm`` (three processes); this
test only checks correctness under the same shape of load, in-process on 127.0.0.1.
"""

import pytest_twisted
from twisted.internet import defer, reactor
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

from namesrv.client import RemotingClientProtocol
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode, Version
from namesrv.protocol.command import make_request
from bench.scenarios.storm import PROBE_TOPIC, build_minimal_service, register_frame
from tests.config_for import make_config


def as_request(frame):
    return decode_frame(frame[4:])


@pytest_twisted.inlineCallbacks
def test_storm_answers_every_registration_and_every_route_read():
    config = make_config(schedulerTurnBudgetMillis=1)
    svc = build_minimal_service(reactor, config)
    port = reactor.listenTCP(0, svc.factory, interface="127.0.0.1")
    clients = []
    try:
        endpoint = TCP4ClientEndpoint(reactor, "127.0.0.1", port.getHost().port)
        probe = yield connectProtocol(endpoint, RemotingClientProtocol())
        clients.append(probe)
        answer = yield probe.call(as_request(register_frame(10 ** 6, [PROBE_TOPIC, PROBE_TOPIC + "-2"], 1)))
        assert answer.code == ResponseCode.SUCCESS
        brokers = []
        for _ in range(30):
            brokers.append((yield connectProtocol(endpoint, RemotingClientProtocol())))
        clients.extend(brokers)
        reader = yield connectProtocol(endpoint, RemotingClientProtocol())
        clients.append(reader)

        for round_ in (1, 2):
            registrations = [b.call(as_request(register_frame(n, ["t-%d-%d" % (n, i) for i in range(200)], round_)))
                             for n, b in enumerate(brokers)]
            reads = [reader.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": PROBE_TOPIC},
                                              version=Version.V4_9_8)) for _ in range(20)]
            answers = yield defer.gatherResults(registrations + reads)
            assert [a.code for a in answers] == [ResponseCode.SUCCESS] * len(answers)
            assert all(b'"brokerName":"storm-broker-1000000"' in a.body for a in answers[len(registrations):])
        assert len(svc.routes.topic_queue_table) == 30 * 200 + 2
        limits = svc.chain.limits
        assert sum(limits.in_flight.values()) == 0 and sum(limits.waiting.values()) == 0
        assert svc.chain.priority.pending() == 0
    finally:
        for client in clients:
            client.transport.loseConnection()
        yield defer.DeferredList([c.closed for c in clients])
        yield port.stopListening()
