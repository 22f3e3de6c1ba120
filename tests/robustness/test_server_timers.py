"""The per-connection timers as the server builds them from its config, on a task.Clock.

serverChannelMaxIdleTimeSeconds and serverReadFrameTimeoutSeconds used to be proven with a
real ``twistd namesrv`` and seconds of sleeping (tests/robustness/test_limits.py); what
those runs showed beyond the protocol's own Clock tests (tests/protocol/test_remoting.py)
is that the factory hands the configured values to every connection, which this proves in
milliseconds.
"""

import json
import struct

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from namesrv.observe.eventlog import NullEventLog
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.server.factory import RemotingServerFactory
from tests.config_for import make_config
from tests.fakes import RecordingEventLog


class Answering:
    def dispatch(self, request, connection):
        return request.make_response(ResponseCode.TOPIC_NOT_EXIST, "no route")


class Housekeeping:
    def __init__(self):
        self.closed = []

    def connection_closed(self, connection):
        self.closed.append(connection)


def accept(clock, events=None, **config):
    """One connection accepted by a factory built from ``config``; every timer on ``clock``."""
    factory = RemotingServerFactory(Answering(), make_config(**config), Housekeeping(), events or NullEventLog(),
                                    reactor=clock)
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 40001))
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport


def route_frame(opaque):
    return encode_frame(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Busy"}, opaque=opaque))


def test_idle_connection_is_closed_and_a_busy_one_is_not():
    clock = task.Clock()
    silent, silent_transport = accept(clock, serverChannelMaxIdleTimeSeconds=1)
    busy, busy_transport = accept(clock, serverChannelMaxIdleTimeSeconds=1)
    for opaque in range(1, 9):   # a request every 0.3 s: never idle for 1 s
        busy.dataReceived(route_frame(opaque))
        clock.advance(0.3)
    assert silent_transport.disconnecting
    assert not busy_transport.disconnecting
    assert busy_transport.value().count(b'"code":17') == 8


def test_the_default_idle_timeout_is_the_java_one():
    clock = task.Clock()
    _, transport = accept(clock)
    clock.advance(119)
    assert not transport.disconnecting
    clock.advance(1)
    assert transport.disconnecting


def test_frame_not_completed_in_time_closes_the_connection():
    clock = task.Clock()
    events = RecordingEventLog()
    proto, transport = accept(clock, events, serverReadFrameTimeoutSeconds=2, serverChannelMaxIdleTimeSeconds=120)
    header = json.dumps({"code": 105, "extFields": {"topic": "T"}}).encode()
    frame = struct.pack(">ii", 4 + len(header) + 1000, len(header)) + header + b"x" * 1000
    for i in range(16):   # one byte every 0.5 s (a slowloris peer), each byte resetting the idle timer
        if transport.disconnecting:
            break
        proto.dataReceived(frame[i:i + 1])
        clock.advance(0.5)
    assert transport.disconnecting and clock.seconds() <= 2.5
    assert [fields["reason"] for fields in events.named("bad_frame")] == ["frame not completed within 2s"]
