"""The remoting port as an endpoint service: new or inherited sockets, accepting or held."""

import os
import socket

import pytest
import pytest_twisted
from twisted.internet import defer, protocol, reactor
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

from namesrv.server.endpoint import RemotingEndpoint, RemotingPortService


class Hello(protocol.Protocol):
    def connectionMade(self):
        self.transport.write(b"hi")
        self.transport.loseConnection()


class Reader(protocol.Protocol):
    def __init__(self):
        self.data = b""
        self.done = defer.Deferred()

    def dataReceived(self, data):
        self.data += data

    def connectionLost(self, reason=None):
        self.done.callback(self.data)


def hello_factory():
    return protocol.Factory.forProtocol(Hello)


@defer.inlineCallbacks
def read_from(port_number):
    reader = yield connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", port_number), Reader())
    data = yield reader.done
    return data


def start(endpoint, factory=None):
    seen = {"listening": [], "failed": []}
    svc = RemotingPortService(endpoint, factory or hello_factory(), seen["listening"].append,
                              seen["failed"].append)
    svc.startService()
    return svc, seen


@pytest_twisted.inlineCallbacks
def test_a_new_socket_accepts_and_stopping_closes_it():
    svc, seen = start(RemotingEndpoint(reactor, 0, "127.0.0.1", 50))
    port = svc.port
    assert seen["listening"] == [port] and port.accepting
    number = port.getHost().port
    assert (yield read_from(number)) == b"hi"
    yield svc.stopService()
    assert svc.port is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", number), timeout=5).close()


@pytest_twisted.inlineCallbacks
def test_a_held_socket_queues_connections_for_another_acceptor_and_stopping_keeps_it_for_them():
    svc, _ = start(RemotingEndpoint(reactor, 0, "127.0.0.1", 50, hold=True))
    port = svc.port
    assert not port.accepting
    other = socket.socket(fileno=os.dup(port.socket.fileno()))   # as a read worker inherits it
    try:
        client = socket.create_connection(("127.0.0.1", port.getHost().port), timeout=5)   # queued, not refused
        yield svc.stopService()
        other.settimeout(5)
        accepted, _ = other.accept()   # our close did not shut the shared socket down
        accepted.close()
        client.close()
    finally:
        other.close()


@pytest_twisted.inlineCallbacks
def test_an_inherited_socket_is_accepted_from_until_held():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(5)
    sock.setblocking(False)
    svc, seen = start(RemotingEndpoint(reactor, 9, "127.0.0.1", 50, hold=True, inherit=lambda: defer.succeed(sock)))
    port = svc.port
    assert port.socket is sock and port.accepting
    assert (yield read_from(sock.getsockname()[1])) == b"hi"
    yield port.hold()
    assert not port.accepting
    yield svc.stopService()


def test_a_port_in_use_fails_the_start():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        svc = RemotingPortService(RemotingEndpoint(reactor, taken.getsockname()[1], "127.0.0.1", 50),
                                  hello_factory(), lambda port: None, lambda failure: None)
        with pytest.raises(OSError):
            svc.startService()
    finally:
        taken.close()


@pytest_twisted.inlineCallbacks
def test_a_second_server_on_the_same_port_fails_to_start():
    first, _ = start(RemotingEndpoint(reactor, 0, "127.0.0.1", 50))
    try:
        second = RemotingPortService(RemotingEndpoint(reactor, first.port.getHost().port, "127.0.0.1", 50),
                                     hello_factory(), lambda port: None, lambda failure: None)
        with pytest.raises(OSError):
            second.startService()
    finally:
        yield first.stopService()


def test_a_failed_takeover_is_reported_once_and_nothing_listens():
    inherited = defer.Deferred()
    svc, seen = start(RemotingEndpoint(reactor, 0, "127.0.0.1", 50, inherit=lambda: inherited))
    assert svc.port is None
    inherited.errback(RuntimeError("the old process refused"))
    assert [f.getErrorMessage() for f in seen["failed"]] == ["the old process refused"]
    assert svc.port is None and seen["listening"] == []


def test_stopping_while_waiting_for_a_takeover_cancels_quietly():
    inherited = defer.Deferred()
    svc, seen = start(RemotingEndpoint(reactor, 0, "127.0.0.1", 50, inherit=lambda: inherited))
    svc.stopService()
    assert seen == {"listening": [], "failed": []}
    inherited.callback(None)   # too late: ignored
