"""The main process adopts a handed-over broker's socket: what was read comes first, and it reads large."""

import os
import socket

import pytest
from twisted.internet import protocol
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.testing import StringTransport

from namesrv.protocol.remoting import peer_address
from namesrv.readworkers.main.handoff import BROKER_READ_BYTES, adopt_connection
from namesrv.server.factory import NoHousekeeping, RemotingServerFactory
from tests.config_for import make_config
from tests.fakes import RecordingEventLog


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


@pytest.mark.parametrize("peer,expected_peer,expected_via", [
    ("203.0.113.7:40001", "203.0.113.7:40001", "192.168.1.1:54321"),   # a PROXY header's client: kept
    ("2001:db8::7:40002", "2001:db8::7:40002", "192.168.1.1:54321"),
    ("192.168.1.1:54321", "192.168.1.1:54321", None),                  # the socket's own peer
    ("?", "192.168.1.1:54321", None),                                  # nothing usable: the socket's
])
def test_an_adopted_connection_keeps_the_address_it_was_served_as(peer, expected_peer, expected_via):
    """A worker read the connection's PROXY header; the main process never sees one, so the address
    travels with the socket (StringTransport's peer, 192.168.1.1:54321, stands for the proxy)."""
    factory = RemotingServerFactory(None, make_config(), NoHousekeeping(), RecordingEventLog())
    ours, theirs = socket.socketpair()
    try:
        proto = adopt_connection(AdoptingReactor(), factory, os.dup(ours.fileno()), peer, b"")
        assert (proto.peer, proto.via) == (expected_peer, expected_via)
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize("text,address", [
    ("203.0.113.7:1", IPv4Address("TCP", "203.0.113.7", 1)),
    ("::1:9876", IPv6Address("TCP", "::1", 9876)),
    ("0:0:0:0:0:0:0:1:9876", IPv6Address("TCP", "::1", 9876)),
    ("example.com:1", None), ("203.0.113.7:65536", None), ("203.0.113.7", None), ("", None), (None, None),
])
def test_peer_address_reads_back_what_format_peer_wrote(text, address):
    assert peer_address(text) == address
