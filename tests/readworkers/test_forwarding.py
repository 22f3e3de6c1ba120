"""A worker's client connections (local answer or forward) and the main side of a forwarded one."""

import pytest
from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.protocol.remoting import ConnectionState
from namesrv.readworkers.main.forwarded import ForwardedConnectionFactory
from namesrv.readworkers.worker.connections import Upstream, WorkerConnectionFactory
from tests.brokers import register_request, route_request
from tests.fakes import run_turns
from tests.protocol.test_remoting import written_frames
from tests.readworkers.test_replica import Harness
from tests.fakes import run_turns


class FakeUpstream:
    def __init__(self, downstream):
        self.downstream = downstream
        self.frames = []
        self.closed = False

    def send(self, frame):
        self.frames.append(frame)

    def close(self):
        self.closed = True


class Factory(WorkerConnectionFactory):
    def open_upstream(self, connection):
        self.upstream = FakeUpstream(connection)
        return self.upstream


def connect(factory):
    proto = factory.buildProtocol(None)
    transport = StringTransport(peerAddress=None)
    proto.makeConnection(transport)
    return proto, transport


def worker(tmp_path):
    harness = Harness(tmp_path)
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    harness.publish()
    return harness, Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock())


def test_fresh_reads_are_answered_locally_and_the_rest_forwarded(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = connect(factory)
    read = encode_frame(route_request("T1", opaque=7))
    write = encode_frame(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "N", "key": "k", "value": "v"},
                                      opaque=8))
    proto.dataReceived(read + write + read)
    answers = [decode_frame(f[4:]) for f in written_frames(transport)]
    assert [(a.opaque, a.code) for a in answers] == [(7, ResponseCode.SUCCESS)] * 2
    assert factory.upstream.frames == [write[4:]]   # the very bytes the client sent
    proto.connectionLost(None)
    assert factory.upstream.closed


def test_stale_reads_are_forwarded(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = connect(factory)
    proto.dataReceived(encode_frame(route_request("T1", opaque=1)))   # fills the answer cache
    written_frames(transport)
    harness.shared.bump()   # a change in the main process, not yet published
    frame = encode_frame(route_request("T1", opaque=2))
    proto.dataReceived(frame)
    assert transport.value() == b""
    assert factory.upstream.frames == [frame[4:]]
    harness.publish()
    proto.dataReceived(encode_frame(route_request("T1", opaque=3)))
    assert [decode_frame(f[4:]).opaque for f in written_frames(transport)] == [3]


def test_main_closing_the_forwarded_connection_closes_the_client(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = connect(factory)
    proto.dataReceived(encode_frame(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "k"})))
    proto.upstream_lost(factory.upstream)
    assert transport.disconnecting


def test_upstream_passes_whole_answer_frames_only():
    class Downstream:
        peer = "127.0.0.1:5"
        written = []

        def write_frames(self, data):
            self.written.append(data)

        def upstream_lost(self, upstream):
            pass

    downstream = Downstream()
    upstream = Upstream(downstream)
    upstream.send(b"queued before connecting")
    transport = StringTransport()
    upstream.makeConnection(transport)
    assert transport.value().startswith(b"PEER 127.0.0.1:5\n\x00\x00\x00\x18queued")
    one = encode_frame(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "a"}))
    two = encode_frame(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "b"}))
    upstream.dataReceived(one[:5])
    assert downstream.written == []
    upstream.dataReceived(one[5:] + two[:-1])
    upstream.dataReceived(two[-1:])
    assert downstream.written == [one, two]


def test_forwarded_connection_takes_the_clients_address_from_the_preface(tmp_path):
    harness = Harness(tmp_path)
    factory = ForwardedConnectionFactory(harness.service.factory)
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    frame = encode_frame(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"], opaque=4))
    data = b"PEER 127.0.0.9:4242\n" + frame
    proto.dataReceived(data[:10])
    proto.dataReceived(data[10:])
    assert proto.peer == "127.0.0.9:4242"
    run_turns(harness.service.reactor)   # the isolation dispatcher runs broker work in the scheduler's turns
    assert decode_frame(written_frames(transport)[0][4:]).code == ResponseCode.SUCCESS
    # the broker is bound to this connection: closing it runs the usual housekeeping
    proto.connectionLost(None)
    harness.service.reactor.advance(0)      # closes are forgotten in the next turn, in one batch
    assert harness.main(route_request("T1")).code == ResponseCode.TOPIC_NOT_EXIST


def test_forwarded_connection_without_a_preface_is_closed(tmp_path):
    harness = Harness(tmp_path)
    proto = ForwardedConnectionFactory(harness.service.factory).buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(encode_frame(route_request("T1")))
    proto.dataReceived(b"x" * 400)
    assert transport.disconnecting


class TcpLikeTransport(StringTransport):
    """A StringTransport with what a handoff needs of a TCP transport."""

    def fileno(self):
        return 99

    def stopReading(self):
        self.reading = False


def test_a_registration_hands_the_connection_over_with_what_followed(tmp_path, monkeypatch):
    import namesrv.readworkers.worker.connections as forwarding
    handed = []
    monkeypatch.setattr(forwarding, "hand_off", lambda reactor, path, conn, unread: handed.append((path, unread)))
    harness, factory = worker(tmp_path)
    factory.handoff_path = "/run/handoff.sock"
    proto = factory.buildProtocol(None)
    proto.makeConnection(TcpLikeTransport())
    register = encode_frame(register_request("C1", "broker-z", "10.0.0.9:10911", topics=["T1", "T2"], opaque=1))
    after = encode_frame(route_request("T1", opaque=2))
    proto.dataReceived(encode_frame(route_request("T1", opaque=0)) + register + after[:9])
    proto.dataReceived(after[9:])   # arrives after the handoff: the main process reads it from the socket
    assert handed == [("/run/handoff.sock", register + after[:9])]
    assert proto.state is ConnectionState.MOVED and factory.handoffs == 1
    assert [decode_frame(f[4:]).opaque for f in written_frames(proto.transport)] == [0]


def test_no_handoff_while_something_is_in_flight(tmp_path, monkeypatch):
    import namesrv.readworkers.worker.connections as forwarding
    monkeypatch.setattr(forwarding, "hand_off", lambda *a: pytest.fail("handed over"))
    harness, factory = worker(tmp_path)
    factory.handoff_path = "/run/handoff.sock"
    proto = factory.buildProtocol(None)
    proto.makeConnection(TcpLikeTransport())
    proto.dataReceived(encode_frame(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "k"})))
    register = register_request("C1", "broker-z", "10.0.0.9:10911", topics=["T1", "T2"])
    proto.dataReceived(encode_frame(register))   # the KV read is still at the main process: forward
    assert len(factory.upstream.frames) == 2 and proto.state is ConnectionState.READING


def test_a_malformed_handoff_closes_its_descriptor():
    import os
    from namesrv.readworkers.main.handoff import HandoffReceiver
    adopted = []
    receiver = HandoffReceiver(lambda *a: adopted.append(a))
    read_end, write_end = os.pipe()
    receiver.fileDescriptorReceived(write_end)
    receiver.dataReceived(b"NOT A HANDOFF\n")
    receiver.connectionLost(None)
    assert adopted == []
    os.close(read_end)
    with pytest.raises(OSError):
        os.fstat(write_end)


def test_no_connection_keeps_a_reads_bytes_alive(tmp_path):
    """A connection must not hold on to the buffer of its last read (a whole registration)."""
    harness = Harness(tmp_path)
    proto = harness.service.factory.buildProtocol(None)
    proto.makeConnection(StringTransport())
    frame = encode_frame(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T%d" % i for i in range(50)]))
    proto.dataReceived(frame + encode_frame(route_request("T1")))
    assert proto.unread() == b""
    assert proto.reader._data == b""   # not even a reference to the read
