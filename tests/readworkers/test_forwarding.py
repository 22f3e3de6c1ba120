"""A worker's client connections (local answer or forward) and the main side of a forwarded one."""

import pytest
from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.protocol.remoting import ConnectionState
from namesrv.readworkers.main.forwarded import ForwardedConnectionFactory
from namesrv.readworkers.worker.connections import Upstream
from tests.brokers import register_request, route_request
from tests.fakes import run_turns, written_frames
from tests.readworkers.harness import Harness, connect, worker


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

        def from_main(self, data):
            return data

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


def _handing(tmp_path, monkeypatch, wait_clock=None):
    import namesrv.readworkers.worker.connections as forwarding
    handed = []
    monkeypatch.setattr(forwarding, "hand_off", lambda reactor, path, conn, unread: handed.append(unread))
    harness, factory = worker(tmp_path, reactor=wait_clock)   # with a clock, stale reads wait as in a worker
    factory.handoff_path = "/run/handoff.sock"
    proto = factory.buildProtocol(None)
    proto.makeConnection(TcpLikeTransport())
    return harness, factory, proto, handed


def _header_end(frame):
    return 8 + (int.from_bytes(frame[4:8], "big") & 0xFFFFFF)


def test_a_registration_is_handed_over_as_soon_as_its_header_is_in(tmp_path, monkeypatch):
    """The rest of its body (600 KB at 4,000 topics) is read once, by the main process, not here."""
    harness, factory, proto, handed = _handing(tmp_path, monkeypatch)
    register = encode_frame(register_request("C1", "broker-z", "10.0.0.9:10911",
                                             topics=["T%d" % i for i in range(200)], opaque=1))
    read = encode_frame(route_request("T1", opaque=0))
    cut = _header_end(register)
    proto.dataReceived(read + register[:cut - 1])
    assert handed == [] and proto.state is ConnectionState.READING     # the header is not all in
    proto.dataReceived(register[cut - 1:cut + 10])
    assert handed == [register[:cut + 10]]                              # what was read of it, and no more
    assert proto.state is ConnectionState.MOVED and factory.handoffs == 1
    proto.dataReceived(register[cut + 10:])                             # not ours any more: dropped
    assert handed == [register[:cut + 10]]
    assert [decode_frame(f[4:]).opaque for f in written_frames(proto.transport)] == [0]


def test_a_started_frame_of_another_request_is_read_whole_and_forwarded(tmp_path, monkeypatch):
    harness, factory, proto, handed = _handing(tmp_path, monkeypatch)
    put = encode_frame(make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "N", "key": "k"}, opaque=3,
                                    body=b"x" * 5000))
    proto.dataReceived(put[:_header_end(put) + 5])
    proto.dataReceived(put[_header_end(put) + 5:])
    assert handed == [] and factory.upstream.frames == [put[4:]]


def test_a_started_registration_whose_header_does_not_decode_is_answered_as_java_would(tmp_path, monkeypatch):
    """No early move: the whole frame arrives here and gets the usual treatment (a bad header closes)."""
    harness, factory, proto, handed = _handing(tmp_path, monkeypatch)
    header = b'{"code":103,'                                      # cut short: not JSON
    frame = (4 + len(header) + 100).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header + b"b" * 100
    proto.dataReceived(frame[:-50])
    assert handed == [] and proto.state is ConnectionState.READING
    proto.dataReceived(frame[-50:])
    assert handed == [] and proto.transport.disconnecting


def test_no_handoff_while_a_read_on_the_connection_waits_for_a_fresh_replica(tmp_path, monkeypatch):
    """Its answer would have nowhere to go once the socket has moved: the registration is forwarded."""
    from twisted.internet import task
    from namesrv.readworkers.worker.freshness import WAIT
    clock = task.Clock()
    harness, factory, proto, handed = _handing(tmp_path, monkeypatch, clock)
    harness.shared.bump()                                          # acknowledged, not yet published
    proto.dataReceived(encode_frame(route_request("T1", opaque=5)))
    assert proto.waiting_reads == 1
    register = encode_frame(register_request("C1", "broker-z", "10.0.0.9:10911", topics=["T1"], opaque=6))
    proto.dataReceived(register)
    assert handed == [] and factory.upstream.frames == [register[4:]]
    clock.advance(WAIT)                                            # the read gives up waiting: forwarded too
    assert proto.waiting_reads == 0
    assert len(factory.upstream.frames) == 2


def test_a_waiting_read_released_while_the_main_process_moves_the_counter_again_is_answered(tmp_path, monkeypatch):
    """The shared counter is written by the main process at any moment: a replica fresh at one look may be
    stale at the next. A read released then was handed to the dispatcher, which forwarded the frame of
    whatever request was being handled (none: a TypeError in the middle of applying a publication, which
    made the replica unusable until a full copy, and lost the read)."""
    clock = task.Clock()
    harness, factory, proto, handed = _handing(tmp_path, monkeypatch, clock)
    harness.shared.bump()
    proto.dataReceived(encode_frame(route_request("T1", opaque=5)))
    assert proto.waiting_reads == 1 and written_frames(proto.transport) == []
    looks = iter([True])                                    # fresh at the first look, then the counter moves
    monkeypatch.setattr(harness.replica, "fresh", lambda: next(looks, False))
    harness.publish()                                       # applied: the waiting read is released
    assert proto.waiting_reads == 0
    answers = [decode_frame(f[4:]) for f in written_frames(proto.transport)]
    assert [(a.opaque, a.code) for a in answers] == [(5, ResponseCode.SUCCESS)]


def _stale_read_hedged(tmp_path, monkeypatch):
    """A route read on a stale replica, waited past the hedge: its copy is with the main process."""
    from namesrv.readworkers.worker.freshness import HEDGE
    clock = task.Clock()
    harness, factory, proto, handed = _handing(tmp_path, monkeypatch, clock)
    written_frames(proto.transport)
    harness.shared.bump()                                   # acknowledged, not yet published
    read = encode_frame(route_request("T1", opaque=5))
    proto.dataReceived(read)
    clock.advance(HEDGE)
    assert factory.upstream.frames == [read[4:]] and proto.waiting_reads == 1 and proto.awaiting == 1
    main_answer = encode_frame(harness.main(route_request("T1", opaque=5)))
    return harness, proto, Upstream(proto), main_answer


def test_a_hedged_read_the_main_process_answers_first_is_answered_once(tmp_path, monkeypatch):
    harness, proto, upstream, main_answer = _stale_read_hedged(tmp_path, monkeypatch)
    upstream.dataReceived(main_answer)
    assert written_frames(proto.transport) == [main_answer] and proto.waiting_reads == 0 and proto.awaiting == 0
    harness.publish()                                       # the replica fresh again: nothing more for that read
    assert written_frames(proto.transport) == [] and not proto.hedged


def test_a_hedged_read_the_replica_answers_first_drops_the_main_processs_answer(tmp_path, monkeypatch):
    harness, proto, upstream, main_answer = _stale_read_hedged(tmp_path, monkeypatch)
    other = encode_frame(make_response_to(5000))
    harness.publish()
    (local,) = written_frames(proto.transport)
    assert decode_frame(local[4:]).opaque == 5 and local == main_answer and proto.waiting_reads == 0
    upstream.dataReceived(main_answer + other)              # late: dropped; an answer to anything else passes
    assert written_frames(proto.transport) == [other] and proto.awaiting == 0 and not proto.hedged


def make_response_to(opaque):
    return make_request(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "k"}, opaque=opaque).make_response(
        ResponseCode.SUCCESS)
