"""The old process's side of a takeover, message by message (StringTransport, task.Clock)."""

from twisted.internet import task

from namesrv.handover import handing, messages, peers
from namesrv.handover.handing import HandingSession
from namesrv.handover.messages import MessageReader, encode
from namesrv.timing import drainloop
from tests.handover.fakes import DescriptorTransport, FakeServer


def session(server=None, running=lambda pid: True):
    server = server or FakeServer()
    clock = task.Clock()
    proto = HandingSession(server, clock, is_running=running)
    transport = DescriptorTransport()
    proto.makeConnection(transport)
    return proto, transport, server, clock


def hello(instance="id-1", listen="127.0.0.1:9876", versions=(1,)):
    return encode(messages.HELLO, versions=list(versions), instance=instance, listen=listen, pid=123)


def sent(transport):
    return MessageReader().feed(transport.value())


def test_a_full_takeover_in_order():
    proto, transport, server, clock = session()
    proto.dataReceived(hello())
    assert server.calls == ["begin"] and proto.state == "draining"
    clock.advance(drainloop.QUICK)
    assert transport.value() == b""                      # nothing sent while in flight
    server.is_settled = True
    clock.advance(drainloop.QUICK)
    assert server.calls == ["begin", "tables"]
    (state,) = sent(transport)
    assert state == {"kind": "state", "version": 1, "routes": b"ROUTES"}
    assert transport.descriptors == [(0, 40)]             # the listening socket, with the state's first byte
    proto.dataReceived(encode(messages.READY))
    messages_out = sent(transport)
    assert [m["kind"] for m in messages_out] == ["state", "connection", "connection", "done"]
    assert [(m["peer"], m["unread"]) for m in messages_out[1:3]] == [("127.0.0.1:5000", b"\x00\x00"),
                                                                     ("127.0.0.1:5001", b"")]
    assert messages_out[3]["moved"] == 2 and messages_out[3]["closed"] == 1
    # each socket goes with the first byte of its own message
    starts = []
    offset = 0
    for chunk in _frames(transport.value()):
        starts.append(offset)
        offset += len(chunk)
    assert [fd for _, fd in transport.descriptors] == [40, 41, 42]
    assert [at for at, _ in transport.descriptors] == starts[:3]
    assert not transport.disconnecting   # the new process closes once it has read everything
    proto.connectionLost(None)
    assert server.calls[-2:] == [("finished", 2, 1), ("release", [41, 42])]
    clock.advance(peers.EXIT_WAIT)       # the new process still runs: it has taken over
    assert server.calls[-1] == "exit"


def done_session(running):
    proto, transport, server, clock = session(running=running)
    proto.dataReceived(hello())
    server.is_settled = True
    clock.advance(drainloop.QUICK)
    proto.dataReceived(encode(messages.READY))
    return proto, transport, server, clock


def test_the_new_process_dying_after_ready_makes_the_old_one_serve_again():
    """Killed while the connections travel (or before it closed the conversation): the old
    process, which still holds the listening socket, serves again instead of exiting."""
    alive = {123: True}
    proto, transport, server, clock = done_session(lambda pid: alive[pid])
    proto.connectionLost(None)
    clock.advance(peers.STEP)
    assert "exit" not in server.calls and "resume" not in server.calls   # still exiting, maybe
    alive[123] = False
    clock.advance(peers.STEP)
    assert server.calls[-1] == "resume" and "exit" not in server.calls
    clock.advance(peers.EXIT_WAIT * 2)
    assert "exit" not in server.calls


def test_a_new_process_that_never_closes_after_done_is_closed_on_then_the_old_one_exits():
    proto, transport, server, clock = done_session(lambda pid: True)
    clock.advance(handing.DONE_TIMEOUT)
    assert transport.disconnecting
    proto.connectionLost(None)
    clock.advance(peers.EXIT_WAIT)
    assert server.calls[-1] == "exit"


def _frames(data):
    import struct
    while data:
        (n,) = struct.unpack(">I", data[:4])
        yield data[:4 + n]
        data = data[4 + n:]


def test_another_instance_is_refused_and_nothing_drains():
    proto, transport, server, clock = session()
    proto.dataReceived(hello(instance="someone-else"))
    (refusal,) = sent(transport)
    assert refusal["kind"] == "refuse" and "someone-else" in refusal["reason"]
    assert server.calls == [] and transport.disconnecting


def test_another_listen_address_is_refused():
    proto, transport, server, clock = session()
    proto.dataReceived(hello(listen="127.0.0.1:9877"))
    assert sent(transport)[0]["kind"] == "refuse"


def test_no_common_version_is_refused_naming_ours():
    proto, transport, server, clock = session()
    proto.dataReceived(hello(versions=(7, 8)))
    (refusal,) = sent(transport)
    assert "no common takeover version" in refusal["reason"] and "[1, 2, 3]" in refusal["reason"]


def test_a_second_takeover_while_one_runs_is_refused():
    server = FakeServer()
    server.busy = True
    proto, transport, _, _ = session(server)
    proto.dataReceived(hello())
    assert sent(transport)[0]["reason"] == "a takeover is already under way"


def test_the_new_process_leaving_before_ready_resumes_the_old_one():
    proto, transport, server, clock = session()
    proto.dataReceived(hello())
    server.is_settled = True
    clock.advance(drainloop.QUICK)
    proto.connectionLost(None)
    assert server.calls[-1] == "resume" and "detach_clients" not in server.calls


def test_no_ready_in_time_closes_and_resumes():
    proto, transport, server, clock = session()
    proto.dataReceived(hello())
    server.is_settled = True
    clock.advance(drainloop.QUICK)
    clock.advance(handing.READY_TIMEOUT)
    assert transport.disconnecting
    proto.connectionLost(None)
    assert server.calls[-1] == "resume"


def test_a_drain_that_never_settles_goes_on_after_the_grace():
    proto, transport, server, clock = session()
    proto.dataReceived(hello())
    clock.pump([drainloop.SLOW] * int(drainloop.MAIN_GRACE / drainloop.SLOW + 2))
    assert sent(transport)[0]["kind"] == "state"


def test_a_drain_is_looked_at_every_ms_at_first_then_less_often():
    proto, transport, server, clock = session()
    looks = []
    server.settled = lambda: looks.append(clock.seconds()) and False
    proto.dataReceived(hello())
    assert len(looks) == 1                    # at once
    clock.pump([drainloop.QUICK] * (drainloop.QUICK_LOOKS - 1))
    assert len(looks) == drainloop.QUICK_LOOKS  # then every ms
    clock.pump([drainloop.QUICK] * 10)          # 10 ms more: two looks, not ten
    assert len(looks) == drainloop.QUICK_LOOKS + 2 and not sent(transport)


def test_garbage_or_a_message_out_of_order_closes_without_draining():
    proto, transport, server, clock = session()
    proto.dataReceived(b"\x00\x00\x00\x01\xc1")
    assert transport.disconnecting and server.calls == []
    proto, transport, server, clock = session()
    proto.dataReceived(encode(messages.READY))
    assert transport.disconnecting and server.calls == []


def test_version_2_copies_the_tables_first_while_serving_then_only_what_changed():
    proto, transport, server, clock = session()
    proto.dataReceived(hello(versions=(1, 2)))
    (first,) = sent(transport)
    assert first == {"kind": "precopy", "version": 2, "routes": b"FIRST COPY"}
    assert server.calls == ["precopy"] and proto.state == "precopy"   # nothing drains yet
    transport.clear()
    proto.dataReceived(encode(messages.PRECOPIED))
    assert server.calls == ["precopy", "begin"] and proto.state == "draining"
    server.is_settled = True
    clock.advance(drainloop.QUICK)
    (state,) = sent(transport)
    assert state == {"kind": "state", "version": 2, "delta": b"DELTA",
                     "registrations": [["C", "127.0.0.1:10911", b"F" * 32, 3, {"counter": 1}]]}
    assert transport.descriptors == [(0, 40)]
    assert server.calls == ["precopy", "begin", "changes"]


def test_a_new_process_that_leaves_during_the_precopy_stops_nothing():
    proto, transport, server, clock = session()
    proto.dataReceived(hello(versions=(1, 2)))
    proto.connectionLost(None)
    assert server.calls == ["precopy", ("release", []), "abandon"] and not server.busy


def test_a_precopy_never_restored_is_given_up():
    proto, transport, server, clock = session()
    proto.dataReceived(hello(versions=(1, 2)))
    clock.advance(handing.READY_TIMEOUT)
    assert transport.disconnecting
    proto.connectionLost(None)
    assert server.calls == ["precopy", ("release", []), "abandon"]


def test_connections_move_in_batches_over_a_real_socket():
    import os
    import socket
    from types import SimpleNamespace
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    spare = socket.socket()
    moving = [(os.dup(spare.fileno()), "127.0.0.1:%d" % (5000 + i), b"u" * (i % 3) * 70000) for i in range(450)]
    transport = SimpleNamespace(socket=ours, dataBuffer=b"", _tempDataBuffer=[], _sendmsgQueue=[])
    reader_done = []

    def read():
        reader, fds, data = MessageReader(), [], []
        theirs.settimeout(10)
        while not reader_done:
            chunk, got, _, _ = socket.recv_fds(theirs, 1 << 16, 1000)
            fds.extend(got)
            for message in reader.feed(chunk):
                data.append(message)
                if message["kind"] == "done":
                    reader_done.append(1)
        return data, fds

    import threading
    result = []
    thread = threading.Thread(target=lambda: result.append(read()))
    thread.start()
    assert handing.can_send_now(transport)
    handing.send_in_batches(transport, moving, encode(messages.DONE, moved=450, closed=0))
    thread.join(20)
    data, fds = result[0]
    assert [m["peer"] for m in data[:-1]] == [peer for _, peer, _ in moving] and data[-1]["moved"] == 450
    assert [len(m["unread"]) for m in data[:-1]] == [len(unread) for _, _, unread in moving]
    assert len(fds) == 450 and not ours.getblocking()
    for fd in fds + [d for d, _, _ in moving]:
        os.close(fd)
    for s in (ours, theirs, spare):
        s.close()


def test_a_transport_with_bytes_queued_keeps_the_one_by_one_path():
    from types import SimpleNamespace
    transport = SimpleNamespace(socket=object(), dataBuffer=b"queued", _tempDataBuffer=[], _sendmsgQueue=[])
    assert not handing.can_send_now(transport)


def test_clients_are_on_their_way_before_the_brokers_are_detached():
    """Over a real socket pair: when the old process starts detaching its brokers, the clients'
    sockets and messages can already be read by the new process."""
    import os
    import socket
    from types import SimpleNamespace
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    spares = [socket.socketpair() for _ in range(3)]
    server = FakeServer()
    server.sockets = [(os.dup(spares[0][0].fileno()), "127.0.0.1:5000", b"")]
    reader, got, descriptors = MessageReader(), [], []

    def read(flags=0):
        chunk, fds, _, _ = socket.recv_fds(theirs, 1 << 16, 10, flags)
        descriptors.extend(fds)
        got.extend(reader.feed(chunk))

    def detach_brokers():
        read(socket.MSG_DONTWAIT)
        assert [m["peer"] for m in got] == ["127.0.0.1:5000"] and len(descriptors) == 1
        return [(os.dup(spares[i][0].fileno()), "127.0.0.1:%d" % (6000 + i), b"") for i in (1, 2)], 0

    server.detach_brokers = detach_brokers
    proto = HandingSession(server, task.Clock())
    proto.makeConnection(SimpleNamespace(socket=ours, dataBuffer=b"", _tempDataBuffer=[], write=lambda data: None,
                                         loseConnection=lambda: None))
    proto.state = "sent"
    proto.dataReceived(encode(messages.READY))
    while got[-1]["kind"] != "done":
        read()
    assert [m.get("peer") for m in got] == ["127.0.0.1:5000", "127.0.0.1:6001", "127.0.0.1:6002", None]
    assert got[-1] == {"kind": "done", "moved": 3, "closed": 1} and len(descriptors) == 3
    assert proto.state == "done"
    for fd in descriptors:
        os.close(fd)
    for s in [ours, theirs] + [s for pair in spares for s in pair]:
        s.close()


def test_version_3_writes_the_first_copy_to_a_file_while_serving_and_passes_it_open():
    import os
    from twisted.internet import defer
    server = FakeServer()
    writing = defer.Deferred()
    server.precopy_file = lambda: (server.calls.append("precopy_file"), writing)[1]
    proto, transport, server, clock = session(server)
    proto.dataReceived(hello(versions=(1, 2, 3)))
    assert server.calls == ["precopy_file"] and proto.state == "precopy" and transport.value() == b""
    read_end, write_end = os.pipe()
    writing.callback(read_end)                            # written (a chunk per reactor turn, elsewhere)
    (first,) = sent(transport)
    assert first == {"kind": "precopy", "version": 3, "snapshot": True}
    assert transport.descriptors == [(0, read_end)]      # the file's descriptor, with the message's first byte
    transport.clear()
    proto.dataReceived(encode(messages.PRECOPIED))
    server.is_settled = True
    clock.advance(drainloop.QUICK)
    (state,) = sent(transport)
    assert state["kind"] == "state" and state["version"] == 3 and state["delta"] == b"DELTA"
    proto.connectionLost(None)
    assert ("release", [read_end]) in server.calls       # the file's descriptor goes with the conversation
    os.close(read_end)
    os.close(write_end)


def test_version_3_a_new_process_gone_while_the_file_is_written_gets_nothing_and_the_descriptor_closes():
    import os
    from twisted.internet import defer
    server = FakeServer()
    writing = defer.Deferred()
    server.precopy_file = lambda: writing
    proto, transport, server, clock = session(server)
    proto.dataReceived(hello(versions=(3,)))
    proto.connectionLost(None)
    assert "abandon" in server.calls
    read_end, write_end = os.pipe()
    transport.connected = False
    writing.callback(read_end)
    assert transport.descriptors == []
    try:
        os.fstat(read_end)
        raise AssertionError("the file's descriptor stayed open")
    except OSError:
        pass
    os.close(write_end)


def test_version_3_a_first_copy_that_cannot_be_written_refuses_and_stops_nothing():
    from twisted.internet import defer
    server = FakeServer()
    server.precopy_file = lambda: defer.fail(OSError("disk full"))
    proto, transport, server, clock = session(server)
    proto.dataReceived(hello(versions=(3,)))
    (refusal,) = sent(transport)
    assert refusal["kind"] == "refuse" and "disk full" in refusal["reason"] and transport.disconnecting
    assert server.calls == ["abandon"] and "begin" not in server.calls


def test_a_stop_mid_drain_ends_the_conversation_without_resuming_or_asking_for_the_socket():
    """SIGTERM to the old process while it drains: the drain no longer looks (the port is closed: its socket
    is gone), nothing resumes, nothing exits on the conversation's end; the new process starts on its own."""
    proto, transport, server, clock = session()
    proto.dataReceived(hello())
    assert proto.state == "draining"
    proto.stop()
    assert transport.disconnecting and proto.state == "stopped"
    server.is_settled = True
    clock.advance(drainloop.SLOW * 10)
    proto.connectionLost(None)
    clock.advance(peers.EXIT_WAIT)
    assert server.calls == ["begin", ("release", [])]   # no tables, no listen_fd, no resume, no exit


def test_the_factory_stops_every_open_conversation_and_forgets_the_ended_ones():
    factory = handing.HandingFactory(FakeServer(), task.Clock())
    first, second = factory.buildProtocol(None), factory.buildProtocol(None)
    for proto in (first, second):
        proto.makeConnection(DescriptorTransport())
    first.connectionLost(None)
    assert factory.sessions == {second}
    factory.stop()
    assert second.state == "stopped" and second.transport.disconnecting
