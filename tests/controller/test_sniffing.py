"""The controller port's connections by their first bytes, and the bounds on member handshakes:
everything counts towards serverMaxConnections, handshakes under way are capped, and a configured
member's host takes the place of a stranger's oldest one."""

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from namesrv.controller.replication.members import MAGIC, RefusalLog
from namesrv.controller.replication.sniffing import MemberSniffingFactory


class _Remoting:
    class config:
        serverChannelMaxIdleTimeSeconds = 120

    def __init__(self, limit):
        self.limit = limit
        self.connections = {}
        self.refused = 0
        self.built = []

    def connection_limit(self):
        return self.limit

    def buildProtocol(self, addr):
        proto = _Client(self)
        self.built.append(proto)
        return proto


class _Client:
    def __init__(self, remoting):
        self.remoting = remoting
        self.received = b""

    def makeConnection(self, transport):
        self.transport = transport
        self.remoting.connections[id(self)] = self

    def dataReceived(self, data):
        self.received += data

    def connectionLost(self, reason):
        self.remoting.connections.pop(id(self), None)


class _Link:
    def __init__(self):
        self.up = False
        self.closed = False

    def makeConnection(self, transport):
        self.transport = transport

    def dataReceived(self, data):
        pass

    def close(self):
        self.closed = True
        self.transport.loseConnection()

    def connectionLost(self, reason):
        pass


class _Members:
    def __init__(self, hosts=()):
        self.refusals = RefusalLog()
        self.hosts = set(hosts)
        self.links = []

    def accept(self):
        self.links.append(_Link())
        return self.links[-1]

    def member_hosts(self):
        return self.hosts


def _connect(factory, host, data):
    proto = factory.buildProtocol(IPv4Address("TCP", host, 40000))
    if proto is None:
        return None, None
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(data)
    if transport.disconnecting:
        proto.connectionLost(None)          # as the reactor does once the socket is closed
    return proto, transport


def test_magic_only_connections_are_capped_and_the_port_still_takes_clients():
    remoting, members = _Remoting(limit=64), _Members()
    factory = MemberSniffingFactory(remoting, members, task.Clock(), max_pending=16)
    outcomes = [_connect(factory, "10.9.9.9", MAGIC) for _ in range(500)]
    open_ones = [t for _, t in outcomes if t is not None and not t.disconnecting]
    assert len(open_ones) == 16 and len(factory.handshaking()) == 16
    assert factory.refused_handshakes == 500 - 16 and members.refusals.count == 500 - 16
    client, transport = _connect(factory, "10.1.1.1", b"\0\0\0\x10")
    assert client is not None and not transport.disconnecting and remoting.built[-1].received == b"\0\0\0\x10"


def test_every_connection_counts_towards_server_max_connections():
    remoting, members = _Remoting(limit=20), _Members()
    factory = MemberSniffingFactory(remoting, members, task.Clock(), max_pending=16)
    for _ in range(10):
        _connect(factory, "10.9.9.9", MAGIC)                # handshakes under way
    for _ in range(5):
        _connect(factory, "10.1.1.1", b"\0")                 # clients
    for _ in range(5):
        _connect(factory, "10.1.1.2", b"")                   # silent so far
    assert factory.open_connections() == 20
    assert factory.buildProtocol(IPv4Address("TCP", "10.1.1.3", 1)) is None and remoting.refused == 1


def test_a_members_host_takes_the_place_of_a_strangers_oldest_handshake():
    remoting, members = _Remoting(limit=64), _Members(hosts={"10.0.0.2"})
    factory = MemberSniffingFactory(remoting, members, task.Clock(), max_pending=4)
    strangers = [_connect(factory, "10.9.9.9", MAGIC) for _ in range(4)]
    member, transport = _connect(factory, "10.0.0.2", MAGIC)
    assert not transport.disconnecting and members.links[0].closed
    strangers[0][0].connectionLost(None)
    assert [t.disconnecting for _, t in strangers] == [True, False, False, False]
    late, late_transport = _connect(factory, "10.9.9.9", MAGIC)       # a stranger: still refused
    assert late_transport.disconnecting
