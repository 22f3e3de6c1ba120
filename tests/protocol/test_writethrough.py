"""Answers written through: sent at once on an idle plain TCP connection, buffered as Twisted does
otherwise, and always in order (real sockets on 127.0.0.1)."""

import pytest_twisted
from twisted.internet import defer, protocol, reactor
from twisted.internet.testing import StringTransport

from namesrv.protocol import writethrough


class Collect(protocol.Protocol):
    def __init__(self, expected):
        self.data = bytearray()
        self.expected = expected
        self.done = defer.Deferred()

    def dataReceived(self, data):
        self.data += data
        if len(self.data) >= self.expected and not self.done.called:
            self.done.callback(bytes(self.data))


class Keep(protocol.Protocol):
    def __init__(self, made):
        self.made = made

    def connectionMade(self):
        self.made.callback(self)


def test_this_twisted_has_what_it_relies_on():
    assert writethrough.SUPPORTED   # else every answer would wait for a reactor turn again, silently


def test_other_transports_buffer_as_before():
    transport = StringTransport()
    writethrough.write(transport, b"abc")
    assert transport.value() == b"abc"


@pytest_twisted.inlineCallbacks
def test_an_idle_connection_sends_at_once_and_a_busy_one_keeps_the_order():
    big = bytes(range(256)) * 40000                      # 10 MB: more than the socket buffers take at once
    small = [b"%08d" % i for i in range(1000)]
    expected = len(b"first") + len(big) + sum(map(len, small))
    made = defer.Deferred()
    factory = protocol.Factory.forProtocol(lambda: Keep(made))
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    collector = Collect(expected)
    client = yield protocol.ClientCreator(reactor, lambda: collector).connectTCP("127.0.0.1", port.getHost().port)
    server = yield made
    transport = server.transport
    try:
        writethrough.write(transport, b"first")
        # sent by the kernel already: nothing queued, the reactor not asked to watch for writing
        assert transport.dataBuffer == b"" and not transport._tempDataBuffer
        assert transport not in reactor.getWriters()
        writethrough.write(transport, big)               # the rest of it waits in Twisted's buffer
        assert transport.dataBuffer or transport._tempDataBuffer
        for piece in small:                              # behind it, in order
            writethrough.write(transport, piece)
        received = yield collector.done
        assert received == b"first" + big + b"".join(small)
    finally:
        client.transport.loseConnection()
        transport.loseConnection()
        yield port.stopListening()
