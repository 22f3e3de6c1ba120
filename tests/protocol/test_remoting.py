"""The framing protocol, byte by byte, on a StringTransport."""

import struct

from twisted.internet import defer, task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import SerializeType
from namesrv.protocol.command import make_request
from namesrv.protocol.remoting import ConnectionState, RemotingProtocol


class EchoDispatcher:
    """Answers every request with its code as the response code."""

    def __init__(self):
        self.seen = []
        self.deferreds = []

    def dispatch(self, request, connection):
        self.seen.append(request)
        if request.code == 999:
            d = defer.Deferred()
            self.deferreds.append((d, request))
            return d
        if request.is_oneway:
            return None
        return request.make_response(0, remark=str(request.code))


def connect(**kwargs):
    dispatcher = EchoDispatcher()
    events = {"closed": [], "bad": []}
    proto = RemotingProtocol(dispatcher, on_close=events["closed"].append,
                             on_bad_frame=lambda p, reason: events["bad"].append(reason), **kwargs)
    transport = StringTransport(peerAddress=None)
    proto.makeConnection(transport)
    return proto, transport, dispatcher, events


def written_frames(transport):
    """Every whole frame written to ``transport`` (length field included), which is then cleared."""
    data = transport.value()
    transport.clear()
    out = []
    while data:
        (length,) = struct.unpack(">i", data[:4])
        out.append(data[:4 + length])
        data = data[4 + length:]
    return out


def answers(transport):
    return [decode_frame(frame[4:]) for frame in written_frames(transport)]


def frame(code, opaque=1, **kwargs):
    return encode_frame(make_request(code, {"topic": "T"}, opaque=opaque, **kwargs))


def test_one_frame_split_byte_by_byte():
    proto, transport, dispatcher, _ = connect()
    for byte in frame(105, opaque=42):
        proto.dataReceived(bytes([byte]))
    [answer] = answers(transport)
    assert answer.opaque == 42 and answer.is_response and answer.remark == "105"


def test_several_frames_in_one_packet_answered_in_order():
    proto, transport, dispatcher, _ = connect()
    proto.dataReceived(frame(105, 1) + frame(106, 2) + frame(206, 3))
    assert [(a.opaque, a.remark) for a in answers(transport)] == [(1, "105"), (2, "106"), (3, "206")]


def test_rocketmq_request_answered_in_rocketmq():
    proto, transport, _, _ = connect()
    proto.dataReceived(frame(105, 9, serialize_type=SerializeType.ROCKETMQ))
    raw = transport.value()
    assert raw[4] == SerializeType.ROCKETMQ
    [answer] = answers(transport)
    assert answer.serialize_type == SerializeType.ROCKETMQ and answer.opaque == 9


def test_oneway_gets_no_answer():
    proto, transport, dispatcher, _ = connect()
    proto.dataReceived(frame(904, oneway=True))
    assert transport.value() == b"" and dispatcher.seen[0].is_oneway


def test_responses_from_peers_are_dropped():
    proto, transport, dispatcher, _ = connect()
    response = make_request(105, opaque=5).make_response(0)
    proto.dataReceived(encode_frame(response))
    assert dispatcher.seen == [] and transport.value() == b""
    assert not transport.disconnecting


def test_deferred_answers_are_written_when_they_fire():
    proto, transport, dispatcher, _ = connect()
    proto.dataReceived(frame(999, 77))
    assert transport.value() == b""
    d, request = dispatcher.deferreds[0]
    d.callback(request.make_response(0))
    assert answers(transport)[0].opaque == 77


def test_oversize_frame_closes_without_answer():
    proto, transport, dispatcher, events = connect(max_frame_length=1024)
    proto.dataReceived(struct.pack(">i", 1021) + b"\0" * 10)
    assert transport.disconnecting and transport.value() == b""
    assert "exceeds the limit" in events["bad"][0]


def test_frame_at_the_limit_is_accepted():
    proto, transport, dispatcher, events = connect(max_frame_length=1024)
    request = make_request(105, {"topic": "T"}, opaque=3, body=b"")
    raw = encode_frame(request)
    pad = 1024 - len(raw)
    request.body = b"x" * pad
    raw = encode_frame(request)
    assert len(raw) == 1024
    proto.dataReceived(raw)
    assert not transport.disconnecting and answers(transport)[0].opaque == 3


def test_negative_length_closes():
    proto, transport, _, events = connect()
    proto.dataReceived(b"\xff\xff\xff\xf0" + b"\0" * 8)
    assert transport.disconnecting and "negative" in events["bad"][0]


def test_garbage_header_closes_and_later_frames_are_ignored():
    proto, transport, dispatcher, events = connect()
    garbage = struct.pack(">ii", 8, 4) + b"{{{{"
    proto.dataReceived(garbage + frame(105, 1))
    assert transport.disconnecting and dispatcher.seen == [] and transport.value() == b""
    assert len(events["bad"]) == 1


def test_bad_header_length_closes():
    proto, transport, _, events = connect()
    proto.dataReceived(struct.pack(">ii", 6, 100) + b"{}")
    assert transport.disconnecting and "bad header length" in events["bad"][0]


def test_idle_connection_is_closed_after_the_timeout():
    clock = task.Clock()
    proto = RemotingProtocol(EchoDispatcher(), idle_timeout=120)
    proto.callLater = clock.callLater
    transport = StringTransport()
    proto.makeConnection(transport)
    clock.advance(100)
    proto.dataReceived(frame(105))
    clock.advance(100)
    assert not transport.disconnecting
    clock.advance(21)
    assert transport.disconnecting


def test_connection_lost_reports_to_housekeeping():
    proto, transport, _, events = connect()
    proto.connectionLost(None)
    assert events["closed"] == [proto]


def test_paused_connection_processes_nothing_until_resumed():
    proto, transport, dispatcher, _ = connect()
    assert transport.producer is proto and transport.streaming
    proto.pauseProducing()
    assert transport.producerState == "paused"
    proto.dataReceived(frame(105, 1) + frame(105, 2))
    assert dispatcher.seen == []
    proto.resumeProducing()
    assert transport.producerState == "producing"
    assert [a.opaque for a in answers(transport)] == [1, 2]


def test_slow_reader_is_disconnected_after_the_timeout():
    clock = task.Clock()
    proto, transport, _, events = connect(slow_reader_timeout=30, reactor=clock)
    proto.pauseProducing()
    clock.advance(29)
    assert not transport.disconnecting
    clock.advance(2)
    assert transport.disconnecting and "slow reader" in events["bad"][0]


def test_reader_that_drains_in_time_stays():
    clock = task.Clock()
    proto, transport, _, events = connect(slow_reader_timeout=30, reactor=clock)
    proto.pauseProducing()
    clock.advance(20)
    proto.resumeProducing()
    clock.advance(60)
    assert not transport.disconnecting and events["bad"] == []


def test_large_frame_in_small_pieces():
    proto, transport, dispatcher, _ = connect()
    request = make_request(105, {"topic": "T"}, opaque=11, body=b"b" * 300000)
    raw = encode_frame(request)
    for i in range(0, len(raw), 4096):
        proto.dataReceived(raw[i:i + 4096])
    assert dispatcher.seen[0].body == request.body
    assert answers(transport)[0].opaque == 11


from namesrv.protocol.remoting import FrameLimits


def test_header_over_max_header_length_closes():
    proto, transport, dispatcher, events = connect(limits=FrameLimits(max_header_length=64))
    proto.dataReceived(encode_frame(make_request(105, {"topic": "T" * 100})))
    assert transport.disconnecting and "maxHeaderLength" in events["bad"][0] and dispatcher.seen == []


def test_too_many_ext_fields_closes():
    proto, transport, dispatcher, events = connect(limits=FrameLimits(max_ext_fields=3))
    proto.dataReceived(encode_frame(make_request(105, {"a": "1", "b": "2", "c": "3", "d": "4"})))
    assert transport.disconnecting and "maxExtFields" in events["bad"][0]


def test_big_body_refused_from_its_header_before_the_body_arrives():
    proto, transport, dispatcher, events = connect(limits=FrameLimits(max_request_body_length=1000))
    raw = encode_frame(make_request(105, {"topic": "T"}, body=b"x" * 100000))
    proto.dataReceived(raw[:200])
    assert transport.disconnecting and "maxRequestBodyLength" in events["bad"][0]


def test_register_broker_may_carry_a_big_body():
    proto, transport, dispatcher, events = connect(limits=FrameLimits(max_request_body_length=1000))
    raw = encode_frame(make_request(103, {"brokerName": "b"}, opaque=5, body=b"x" * 100000))
    proto.dataReceived(raw[:200])
    proto.dataReceived(raw[200:])
    assert not transport.disconnecting and dispatcher.seen[0].code == 103


def test_frame_not_completed_in_time_closes():
    clock = task.Clock()
    proto, transport, dispatcher, events = connect(limits=FrameLimits(read_frame_timeout=60), reactor=clock)
    raw = frame(105, 1)
    proto.dataReceived(raw[:5])
    clock.advance(59)
    proto.dataReceived(raw[5:6])
    assert not transport.disconnecting
    clock.advance(2)
    assert transport.disconnecting and "not completed" in events["bad"][0]


def test_completed_frames_stop_the_frame_timer():
    clock = task.Clock()
    proto, transport, dispatcher, events = connect(limits=FrameLimits(read_frame_timeout=60), reactor=clock)
    raw = frame(105, 1)
    proto.dataReceived(raw[:5])
    proto.dataReceived(raw[5:])
    clock.advance(120)
    assert not transport.disconnecting and events["bad"] == []


def test_a_connection_says_where_it_is_in_one_state():
    proto, transport, dispatcher, _ = connect()
    assert proto.state is ConnectionState.READING and not proto.paused and not proto.closing
    proto.pauseProducing()
    assert proto.state is ConnectionState.PAUSED and proto.paused
    proto.resumeProducing()
    assert proto.state is ConnectionState.READING
    proto.moved()                      # its socket went to another process
    proto.dataReceived(frame(105, 1))
    proto.connectionLost(None)
    assert proto.state is ConnectionState.MOVED and proto.closing and dispatcher.seen == []
    other, _, _, _ = connect()
    other.pauseProducing()
    other.close()
    assert other.state is ConnectionState.CLOSING and not other.paused


def test_a_subclass_handles_part_of_a_read_and_the_rest_later():
    proto, transport, dispatcher, _ = connect()
    proto.state = ConnectionState.WAITING           # e.g. waiting for its turn: reads are kept in order
    proto.dataReceived(frame(105, 1) + frame(105, 2) + frame(105, 3) + frame(105, 4)[:6])
    assert dispatcher.seen == [] and proto.frames_waiting() == 3 and proto.frames_waiting(up_to=2) == 2
    proto.handle_frames(None, 2)
    assert [a.opaque for a in answers(transport)] == [1, 2] and proto.frames_waiting() == 1
    proto.dataReceived(frame(105, 4)[6:])
    proto.handle_frames(None)
    assert [a.opaque for a in answers(transport)] == [3, 4] and proto.frames_waiting() == 0
