"""serverReadFrameTimeoutSeconds against slowloris, without cutting off busy pipelining clients.

The timer bounds how long ONE frame may take to arrive. A client that pipelines without
pause (an admin tool, a proxy) often has a read end in the middle of the next frame, so
the buffer is never empty; each frame still completes quickly and must not count as a
slow one.
"""

from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import encode_frame
from namesrv.protocol.command import make_request
from namesrv.protocol.remoting import FrameLimits, RemotingProtocol


class Answering:
    def dispatch(self, request, connection):
        return request.make_response(0)


def connect(timeout=2):
    clock = task.Clock()
    bad = []
    proto = RemotingProtocol(Answering(), on_bad_frame=lambda p, reason: bad.append(reason), reactor=clock,
                             limits=FrameLimits(read_frame_timeout=timeout))
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport, clock, bad


def frame(opaque):
    return encode_frame(make_request(105, {"topic": "T"}, opaque=opaque))


def test_a_frame_trickled_for_longer_than_the_timeout_closes_the_connection():
    proto, transport, clock, bad = connect()
    data = frame(1)
    for byte in data[:10]:
        proto.dataReceived(bytes([byte]))
        clock.advance(0.5)
    assert transport.disconnecting and "not completed" in bad[0]


def test_pipelined_frames_that_each_complete_in_time_are_not_cut_off():
    proto, transport, clock, bad = connect()
    frames = [frame(i) for i in range(1, 12)]
    half = len(frames[0]) // 2
    proto.dataReceived(frames[0][:half])
    for previous, following in zip(frames, frames[1:]):
        clock.advance(0.5)
        proto.dataReceived(previous[half:] + following[:half])  # every read ends mid-frame
    clock.advance(0.5)
    proto.dataReceived(frames[-1][half:])
    assert bad == [] and not transport.disconnecting, bad
    assert transport.value().count(b'"flag":1') == len(frames)


def test_timer_stops_once_the_buffer_is_empty():
    proto, transport, clock, bad = connect()
    data = frame(1)
    proto.dataReceived(data[:5])
    clock.advance(1)
    proto.dataReceived(data[5:])
    clock.advance(10)
    assert bad == [] and not transport.disconnecting
