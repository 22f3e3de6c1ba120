"""The main process's end of a hand-off: a broker's socket arrives from a worker and is served here.

Why sockets move, and which, is the worker's side (worker/handoff.py). A takeover
(namesrv/handover) adopts the sockets of the previous main process the same way.
"""

import os
import socket

from twisted.internet import protocol
from twisted.internet.interfaces import IFileDescriptorReceiver
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.protocol.remoting import peer_address
from namesrv.readworkers.channel.unix import HANDOFF, peer_of

log = Logger()


@implementer(IFileDescriptorReceiver)
class HandoffReceiver(protocol.Protocol):
    """One hand-off: adopts the socket once all its bytes are in (the connection's end)."""

    def __init__(self, adopt, factory=None):
        self.adopt = adopt
        self.counting = factory
        self.descriptors = []
        self.data = bytearray()
        if factory is not None:
            factory.open += 1

    def fileDescriptorReceived(self, descriptor):
        os.set_inheritable(descriptor, False)   # never leaked into a later worker process
        self.descriptors.append(descriptor)

    def dataReceived(self, data):
        self.data += data

    def connectionLost(self, reason=None):
        if self.counting is not None:
            self.counting.open -= 1
            self.counting = None
        descriptors, self.descriptors = self.descriptors, []
        header, newline, unread = bytes(self.data).partition(b"\n")
        peer = peer_of(HANDOFF, header)
        if len(descriptors) != 1 or not newline or peer is None:
            log.warn("dropping a malformed handoff ({n} descriptors, header {h!r})", n=len(descriptors),
                     h=header[:64])
            for descriptor in descriptors:
                os.close(descriptor)
            return
        self.adopt(descriptors[0], peer, unread)


class HandoffFactory(protocol.Factory):
    """Hand-offs for ``adopt(descriptor, peer, unread)``, counted while their bytes arrive
    (``open``): a draining pool is done only when none is open."""

    noisy = False

    def __init__(self, adopt):
        self.adopt = adopt
        self.open = 0

    def buildProtocol(self, addr):
        return HandoffReceiver(self.adopt, self)


class _Capturing(protocol.Factory):
    """Builds with ``factory`` and remembers the protocol (adoptStreamConnection returns nothing).

    The protocol is built for ``address`` when given: the address the connection was served as
    where it comes from (a PROXY header's source; the socket's peer is then the proxy's)."""

    noisy = False

    def __init__(self, factory, address=None):
        self.factory = factory
        self.address = address
        self.built = None

    def buildProtocol(self, addr):
        self.built = self.factory.buildProtocol(self.address or addr)
        return self.built


#: bytes a handed-over (broker's) connection reads at a time. Twisted reads 64 KB per readiness, one
#: read per reactor turn: a large REGISTER_BROKER took many turns, and each turn also runs whatever else is
#: due (a whole-table list's slice), so its answer waited for all of them
#: (figures: bench/results/design-figures.md#broker-reads).
BROKER_READ_BYTES = 1 << 20


def adopt_connection(reactor, factory, descriptor, peer, unread):
    """Serve the handed-over socket with ``factory`` (the public one) and feed it ``unread`` first.
    Only brokers are handed over: their connection reads up to ``BROKER_READ_BYTES`` at a time.
    Its ``peer`` stays the one it had (a PROXY header's source, its socket's peer otherwise): the
    header was read where it was accepted, and allow-lists and logs go on seeing that address."""
    try:
        probe = socket.socket(fileno=os.dup(descriptor))
        family = probe.family
        probe.close()
        capturing = _Capturing(factory, peer_address(peer))
        reactor.adoptStreamConnection(descriptor, family, capturing)
    except OSError as e:
        log.warn("cannot adopt {peer}'s connection: {e}", peer=peer, e=e)
        return None
    finally:
        os.close(descriptor)   # adoptStreamConnection took its own duplicate
    proto = capturing.built
    transport = getattr(proto, "transport", None)
    if transport is not None and hasattr(transport, "bufferSize"):
        transport.bufferSize = BROKER_READ_BYTES
    if proto is not None and unread:
        proto.dataReceived(unread)
    return proto
