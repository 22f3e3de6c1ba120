"""The new process's side of a takeover, message by message."""

import os
import socket

from namesrv.handover import messages
from namesrv.handover.messages import MessageReader, encode
from namesrv.handover.taking import OldProcessLeft, TakenState, TakeoverClient, TakeoverRefused
from namesrv.storage.instance import InstanceIdentity
from tests.handover.fakes import DescriptorTransport


def client():
    adopted = []
    proto = TakeoverClient(InstanceIdentity("id-1", "127.0.0.1:9876"),
                           lambda fd, peer, unread: adopted.append((fd, peer, unread)))
    transport = DescriptorTransport()
    proto.makeConnection(transport)
    return proto, transport, adopted


def results(deferred):
    out = []
    deferred.addBoth(out.append)
    return out


def test_hello_names_this_instance_and_our_versions():
    proto, transport, _ = client()
    (hello,) = MessageReader().feed(transport.value())
    assert hello["kind"] == "hello" and hello["versions"] == list(messages.VERSIONS)
    assert (hello["instance"], hello["listen"], hello["pid"]) == ("id-1", "127.0.0.1:9876", os.getpid())


def test_state_then_connections_then_done():
    proto, transport, adopted = client()
    state = results(proto.state)
    done = results(proto.done)
    listening = socket.socket()
    connection_fd = os.dup(listening.fileno())
    proto.fileDescriptorReceived(os.dup(listening.fileno()))
    proto.dataReceived(encode(messages.STATE, version=1, routes=b"ROUTES"))
    (taken,) = state
    assert isinstance(taken, TakenState) and taken.routes == b"ROUTES" and taken.version == 1
    assert taken.listening.family == listening.family
    taken.listening.close()
    proto.ready()
    assert MessageReader().feed(transport.value())[-1]["kind"] == "ready"
    proto.fileDescriptorReceived(connection_fd)
    proto.dataReceived(encode(messages.CONNECTION, peer="127.0.0.1:5000", unread=b"abc")
                       + encode(messages.DONE, moved=1, closed=0))
    assert adopted == [(connection_fd, "127.0.0.1:5000", b"abc")]
    assert done == [(1, 0)] and transport.disconnecting
    os.close(connection_fd)
    listening.close()


def test_a_refusal_fails_the_state_with_its_reason():
    proto, transport, _ = client()
    state = results(proto.state)
    proto.dataReceived(encode(messages.REFUSE, reason="a takeover is already under way"))
    (failure,) = state
    assert failure.check(TakeoverRefused) and "already under way" in failure.getErrorMessage()


def test_a_state_without_its_socket_is_refused():
    proto, transport, _ = client()
    state = results(proto.state)
    proto.dataReceived(encode(messages.STATE, version=1, routes=b"R"))
    assert state[0].check(TakeoverRefused) and transport.disconnecting


def test_the_old_process_going_away_before_the_state_fails_it():
    proto, transport, _ = client()
    state = results(proto.state)
    proto.connectionLost(None)
    assert state[0].check(TakeoverRefused)
    assert state[0].check(OldProcessLeft)   # the coordinator looks whether it died


def test_a_refusal_is_not_the_old_process_leaving():
    proto, transport, _ = client()
    state = results(proto.state)
    proto.dataReceived(encode(messages.REFUSE, reason="no"))
    proto.connectionLost(None)
    assert state[0].check(TakeoverRefused) and not state[0].check(OldProcessLeft)


def test_a_connection_before_ready_is_out_of_order():
    proto, transport, adopted = client()
    results(proto.state)
    proto.dataReceived(encode(messages.CONNECTION, peer="x", unread=b""))
    assert transport.disconnecting and adopted == []


def test_descriptors_left_over_are_closed():
    proto, transport, _ = client()
    results(proto.state)
    r, w = os.pipe()
    proto.fileDescriptorReceived(r)
    proto.connectionLost(None)
    os.close(w)
    try:
        os.fstat(r)
        closed = False
    except OSError:
        closed = True
    assert closed


def test_version_2_restores_the_first_copy_then_takes_the_delta():
    restored = []
    proto = TakeoverClient(InstanceIdentity("id-1", "127.0.0.1:9876"), lambda *a: None, restored.append)
    transport = DescriptorTransport()
    proto.makeConnection(transport)
    state = results(proto.state)
    proto.dataReceived(encode(messages.PRECOPY, version=2, routes=b"FIRST"))
    assert restored == [b"FIRST"] and state == []
    assert MessageReader().feed(transport.value())[-1]["kind"] == "precopied"
    listening = socket.socket()
    proto.fileDescriptorReceived(os.dup(listening.fileno()))
    proto.dataReceived(encode(messages.STATE, version=2, delta=b"DELTA"))
    (taken,) = state
    assert taken.delta == b"DELTA" and taken.routes is None and taken.version == 2
    taken.listening.close()
    listening.close()


def test_a_first_copy_that_cannot_be_restored_fails_the_takeover():
    def refuse(routes):
        raise ValueError("corrupt")

    proto = TakeoverClient(InstanceIdentity("id-1", "127.0.0.1:9876"), lambda *a: None, refuse)
    transport = DescriptorTransport()
    proto.makeConnection(transport)
    state = results(proto.state)
    proto.dataReceived(encode(messages.PRECOPY, version=2, routes=b"FIRST"))
    (failure,) = state
    assert failure.check(TakeoverRefused) and "corrupt" in str(failure.value) and transport.disconnecting


def test_version_3_restores_the_first_copy_from_the_file_it_is_given():
    restored = []
    proto = TakeoverClient(InstanceIdentity("id-1", "127.0.0.1:9876"), lambda *a: None, None, restored.append)
    transport = DescriptorTransport()
    proto.makeConnection(transport)
    state = results(proto.state)
    read_end, write_end = os.pipe()
    proto.fileDescriptorReceived(read_end)
    proto.dataReceived(encode(messages.PRECOPY, version=3, snapshot=True))
    assert restored == [read_end] and state == []
    assert MessageReader().feed(transport.value())[-1]["kind"] == "precopied"
    os.close(read_end)
    os.close(write_end)


def test_version_3_a_first_copy_without_its_file_fails_the_takeover():
    proto = TakeoverClient(InstanceIdentity("id-1", "127.0.0.1:9876"), lambda *a: None, None, lambda fd: None)
    transport = DescriptorTransport()
    proto.makeConnection(transport)
    state = results(proto.state)
    proto.dataReceived(encode(messages.PRECOPY, version=3, snapshot=True))
    (failure,) = state
    assert failure.check(TakeoverRefused) and "without its file" in str(failure.value)
