"""The read workers' reactor (namesrv/server/eventloop.py): a pass takes at most so many ready sockets, oldest
ready first, and counts itself; real sockets on one machine (socketpairs), nothing timed."""

import socket

import pytest
from zope.interface.verify import verifyObject

from namesrv.interfaces import IReactorPasses
from namesrv.server import eventloop


class Reader:
    """A socket the reactor watches for reading; each read is noted in ``log`` with its name."""

    def __init__(self, sock, name, log):
        self.sock, self.name, self.log = sock, name, log

    def fileno(self):
        return self.sock.fileno()

    def doRead(self):
        self.sock.recv(100)
        self.log.append(self.name)

    def logPrefix(self):
        return self.name

    def connectionLost(self, reason):
        pass


@pytest.fixture
def reactor():
    made = eventloop.FairEPollReactor(max_events=2)
    yield made
    made._poller.close()


def test_a_pass_takes_at_most_max_events_ready_sockets_oldest_ready_first(reactor):
    verifyObject(IReactorPasses, reactor)
    log, pairs = [], [socket.socketpair() for _ in range(5)]
    try:
        for index, (ours, _) in enumerate(pairs):
            reactor.addReader(Reader(ours, index, log))
        for index in (3, 0, 4, 1, 2):              # ready in this order
            pairs[index][1].send(b"x")
        passes = []
        while len(log) < 5 and len(passes) < 10:
            reactor.doPoll(0)
            passes.append(list(log))
        assert passes == [[3, 0], [3, 0, 4, 1], [3, 0, 4, 1, 2]] and reactor.passes == 3
        pairs[4][1].send(b"y")                     # ready again: behind nobody now
        reactor.doPoll(0)
        assert log[5:] == [4] and reactor.passes == 4
    finally:
        reactor.removeAll()
        for ours, theirs in pairs:
            ours.close()
            theirs.close()


def test_a_failing_read_drops_its_socket_as_twisted_does(reactor):
    class Broken(Reader):
        def doRead(self):
            raise RuntimeError("boom")

        lost = None

        def connectionLost(self, reason):
            self.lost = reason

    ours, theirs = socket.socketpair()
    try:
        broken = Broken(ours, "broken", [])
        reactor.addReader(broken)
        theirs.send(b"x")
        reactor.doPoll(0)
        assert broken.lost is not None and broken.lost.check(RuntimeError) and broken not in reactor.getReaders()
    finally:
        reactor.removeAll()
        ours.close()
        theirs.close()
