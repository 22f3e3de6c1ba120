"""The probes' kept connections (namesrv/addressing/connections.py): one per server, reused, dropped after
a failed probe so that the next one connects anew; no probe left waiting in a dropped connection."""

from twisted.internet import defer, task
from twisted.internet.testing import StringTransport

from namesrv.addressing.connections import ProbeConnections
from namesrv.client import RemotingClientProtocol
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode


class Peers:
    """``connect`` for ProbeConnections: each call a new protocol on a StringTransport."""

    def __init__(self):
        self.made = []

    def connect(self, reactor, host, port):
        protocol = RemotingClientProtocol()
        transport = StringTransport()
        protocol.makeConnection(transport)
        self.made.append((protocol, transport))
        return defer.succeed(protocol)

    def answer_last_request(self, index=-1):
        protocol, transport = self.made[index]
        frame = transport.value()
        request = decode_frame(frame[4:])
        transport.clear()
        protocol.dataReceived(encode_frame(request.make_response(0)))


def probe(connections, clock):
    return connections.probe(clock, "127.0.0.1", 9876, timeout=1.5, code=RequestCode.GET_NAMESRV_CONFIG)


def test_probes_reuse_one_connection():
    clock, peers = task.Clock(), Peers()
    connections = ProbeConnections(connect=peers.connect)
    for _ in range(5):
        d = probe(connections, clock)
        clock.advance(0.01)
        peers.answer_last_request()
        assert d.called and isinstance(d.result, float)
        clock.advance(2)
    assert len(peers.made) == 1


def test_a_probe_that_times_out_drops_its_connection_and_the_next_connects_anew():
    clock, peers = task.Clock(), Peers()
    connections = ProbeConnections(connect=peers.connect)
    failed = []
    probe(connections, clock).addErrback(failed.append)
    clock.advance(2)
    assert len(failed) == 1
    protocol, transport = peers.made[0]
    assert transport.disconnecting and protocol.pending == {}
    protocol.connectionLost(None)   # the abort completes: nothing waits for an answer there
    d = probe(connections, clock)
    peers.answer_last_request()
    assert len(peers.made) == 2 and isinstance(d.result, float)


def test_a_closed_connection_is_forgotten_and_close_all_closes_the_rest():
    clock, peers = task.Clock(), Peers()
    connections = ProbeConnections(connect=peers.connect)
    probe(connections, clock)
    peers.answer_last_request()
    peers.made[0][0].connectionLost(None)     # the server closed it
    assert connections.connections == {}
    probe(connections, clock)
    peers.answer_last_request()
    connections.close_all()
    assert peers.made[1][1].disconnecting and connections.connections == {}
