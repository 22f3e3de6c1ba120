"""A service with the answer cache on a StringTransport, and its requests, for the answer tests."""

import struct

import pytest
from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import ResponseCode
from namesrv.service import make_service
from tests.brokers import register_request, route_request
from tests.config_for import service_config
from tests.fakes import Reactor, run_turns, written_frames


@pytest.fixture
def server(tmp_path):
    made = []

    def make(**props):
        svc = make_service(service_config(tmp_path, **props), clock=task.Clock(), reactor=Reactor())
        made.append(svc)
        return svc

    yield make
    for svc in made:
        svc.kv.flush_sync()


def connect(svc):
    proto = svc.factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport


def answers(transport):
    return [(frame, decode_frame(frame[4:])) for frame in written_frames(transport)]


def ask(proto, transport, *requests):
    proto.dataReceived(b"".join(encode_frame(r) for r in requests))
    run_turns(proto._reactor)     # broker-control requests run in the scheduler's turns
    return answers(transport)


def register(proto, transport, topics=("T1", "T2"), broker="b1", addr="127.0.0.1:10911", counter=1, **kw):
    ((_, answer),) = ask(proto, transport, register_request("C", broker, addr, topics=list(topics),
                                                            counter=counter, **kw))
    assert answer.code == ResponseCode.SUCCESS
    return answer


def route(topic, opaque, **kwargs):
    return route_request(topic, opaque=opaque, **kwargs)


def _raw(header, opaque_text):
    """A JSON route request with its header written by hand (``opaque_text`` as the opaque literal)."""
    text = header % opaque_text
    data = text.encode()
    return struct.pack(">ii", 4 + len(data), len(data)) + data
