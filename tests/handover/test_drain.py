"""The old main process's drain: order of the steps, what is detached, what is closed."""

import os
import socket

from twisted.internet.interfaces import ISSLTransport
from zope.interface import implementer

from namesrv.handover.drain import ServerDrain
from namesrv.dispatch.inflight import InFlightDispatcher
from namesrv.server.factory import NoHousekeeping


class SocketTransport:
    """Just enough of a TCP transport around a real socket (one end of a socketpair)."""

    def __init__(self, sock):
        self.socket = sock
        self.reading = True
        self.producer = None
        self.dataBuffer = b""
        self._tempDataBuffer = []
        self.lost = False
        self._shouldShutdown = True

    def fileno(self):
        return self.socket.fileno()

    def stopReading(self):
        self.reading = False

    def startReading(self):
        self.reading = True

    def registerProducer(self, producer, streaming):
        self.producer = producer

    def unregisterProducer(self):
        self.producer = None

    def loseConnection(self):
        self.lost = True


@implementer(ISSLTransport)
class TlsTransport(SocketTransport):
    pass


class Connection:
    def __init__(self, transport, peer, buffered=b""):
        self.transport = transport
        transport.producer = self
        self.peer = peer
        self.closing = False
        self.paused = False
        self._buffered = bytes(buffered)

    def unread(self):
        return self._buffered

    def close(self):
        self.closing = True
        self.transport.loseConnection()

    def moved(self):
        self.closing = True


class Factory:
    def __init__(self, connections):
        self.connections = {i: c for i, c in enumerate(connections)}
        self.housekeeping = "real"


class Port:
    reading = True

    def stopReading(self):
        self.reading = False

    def startReading(self):
        self.reading = True


class Pool:
    def __init__(self):
        self.forwarded = Factory([])
        self.divert = None
        self.draining = False
        self.done = False
        self.covered = 0

    def cover(self):
        self.covered += 1

    def drain(self):
        self.draining = True

    def drained(self):
        return self.done


class Service:
    def __init__(self, connections, brokers=()):
        from types import SimpleNamespace
        self.factory = Factory(connections)
        self.port = Port()
        self.read_workers = Pool()
        self.housekeeping = "real"
        self.routes = SimpleNamespace(tables=SimpleNamespace(by_connection={c: {("C", "a")} for c in brokers}))


def pair():
    ours, theirs = socket.socketpair()
    return ours, theirs


def test_begin_stops_accepting_turns_housekeeping_off_and_drains_the_workers():
    service = Service([])
    drain = ServerDrain(service, InFlightDispatcher(None))
    drain.begin()
    assert not service.port.reading and service.read_workers.draining
    assert isinstance(service.factory.housekeeping, NoHousekeeping)
    assert isinstance(service.read_workers.forwarded.housekeeping, NoHousekeeping)
    assert service.read_workers.divert == drain._collect


def test_settled_waits_for_the_workers_then_for_answers_in_flight_and_unsent():
    ours, theirs = pair()
    connection = Connection(SocketTransport(ours), "127.0.0.1:1")
    service = Service([connection])
    inflight = InFlightDispatcher(None)
    drain = ServerDrain(service, inflight)
    drain.begin()
    assert not drain.settled() and connection.transport.reading   # workers first: we still serve
    service.read_workers.done = True
    inflight.count = 1
    assert not drain.settled()
    assert not connection.transport.reading and connection.transport.producer is None
    inflight.count = 0
    connection.transport._tempDataBuffer = [b"answer"]
    assert not drain.settled()
    connection.transport._tempDataBuffer = []
    assert drain.settled()
    ours.close()
    theirs.close()


def test_detaching_moves_plain_sockets_with_their_unread_bytes_and_closes_tls_ones():
    plain, plain_peer = pair()
    tls, tls_peer = pair()
    collected, collected_peer = pair()
    moving_plain = Connection(SocketTransport(plain), "127.0.0.1:1", buffered=b"\x00\x00\x00\x09part")
    tls_connection = Connection(TlsTransport(tls), "127.0.0.1:2")
    service = Service([moving_plain, tls_connection])
    drain = ServerDrain(service, InFlightDispatcher(None))
    drain.begin()
    drain._collect(os.dup(collected.fileno()), "127.0.0.1:3", b"abc")
    sockets, closed = drain.detach_clients()
    assert closed == 1 and tls_connection.closing and tls_connection.transport.lost
    assert [(peer, unread) for _, peer, unread in sockets] == [("127.0.0.1:3", b"abc"),
                                                               ("127.0.0.1:1", b"\x00\x00\x00\x09part")]
    assert moving_plain.closing and moving_plain.transport.lost and not moving_plain.transport._shouldShutdown
    # the detached descriptor is the same socket: what the peer sends can be read from it
    plain_peer.sendall(b"ping")
    moved = socket.socket(fileno=sockets[1][0])
    assert moved.recv(4) == b"ping"
    drain.release(sockets[:1])
    for s in (moved, plain, plain_peer, tls, tls_peer, collected, collected_peer):
        s.close()


def test_resume_serves_everything_again():
    ours, theirs = pair()
    connection = Connection(SocketTransport(ours), "127.0.0.1:1")
    service = Service([connection])
    spawned = []
    service.read_workers.count = 1
    service.read_workers.workers = {}
    service.read_workers._spawn = spawned.append
    drain = ServerDrain(service, InFlightDispatcher(None))
    drain.begin()
    service.read_workers.done = True
    drain.settled()
    drain.resume()
    assert service.factory.housekeeping == "real" and service.port.reading
    assert connection.transport.reading and connection.transport.producer is connection
    assert spawned == [0] and not service.read_workers.draining and service.read_workers.divert is None
    assert service.read_workers.covered == 1   # this process accepts until the new workers listen
    ours.close()
    theirs.close()


def test_clients_move_before_brokers():
    sockets = [pair() for _ in range(3)]
    broker = Connection(SocketTransport(sockets[0][0]), "127.0.0.1:1")
    clients = [Connection(SocketTransport(s[0]), "127.0.0.1:%d" % (i + 2)) for i, s in enumerate(sockets[1:])]
    drain = ServerDrain(Service([broker] + clients, brokers=[broker]), InFlightDispatcher(None))
    drain.begin()
    clients, _ = drain.detach_clients()
    assert [peer for _, peer, _ in clients] == ["127.0.0.1:2", "127.0.0.1:3"] and not broker.closing
    brokers, _ = drain.detach_brokers()
    assert [peer for _, peer, _ in brokers] == ["127.0.0.1:1"]
    moving = clients + brokers
    drain.release(moving)
    for ours, theirs in sockets:
        ours.close()
        theirs.close()
