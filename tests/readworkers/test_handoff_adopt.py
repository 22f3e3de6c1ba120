"""The main process adopts a handed-over broker's socket: what was read comes first, and it reads large."""

import os
import socket

from twisted.internet import protocol
from twisted.internet.testing import StringTransport

from namesrv.readworkers.main.handoff import BROKER_READ_BYTES, adopt_connection


class Recorder(protocol.Protocol):
    def __init__(self):
        self.data = []

    def dataReceived(self, data):
        self.data.append(data)


class AdoptingReactor:
    """adoptStreamConnection as Twisted's: builds with the factory and connects a (string) transport."""

    def adoptStreamConnection(self, descriptor, family, factory):
        proto = factory.buildProtocol(None)
        transport = StringTransport()
        transport.bufferSize = 65536   # Twisted's default for a TCP connection
        proto.makeConnection(transport)


def test_an_adopted_broker_connection_gets_its_unread_bytes_and_reads_a_megabyte_at_a_time():
    factory = protocol.Factory.forProtocol(Recorder)
    ours, theirs = socket.socketpair()
    try:
        proto = adopt_connection(AdoptingReactor(), factory, os.dup(ours.fileno()), "127.0.0.1:1", b"first frame")
        assert proto.data == [b"first frame"]
        assert proto.transport.bufferSize == BROKER_READ_BYTES == 1 << 20
    finally:
        ours.close()
        theirs.close()
