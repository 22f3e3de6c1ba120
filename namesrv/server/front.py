"""A factory that stands in front of the remoting factory (TLS sniffing, PROXY headers) and starts and stops with it,
and the first protocol it builds for each connection."""

from twisted.internet import protocol
from twisted.protocols.policies import TimeoutMixin


class FrontFactory(protocol.Factory):
    """Builds a first protocol for each connection, which hands it to ``wrapped``'s once it knows how."""

    noisy = False

    def __init__(self, wrapped):
        self.wrapped = wrapped

    def doStart(self):
        protocol.Factory.doStart(self)
        self.wrapped.doStart()

    def doStop(self):
        self.wrapped.doStop()
        protocol.Factory.doStop(self)


class FrontProtocol(protocol.Protocol, TimeoutMixin):
    """A connection's first protocol: it waits (with a timeout, while in its factory's ``pending``) for the
    bytes that say where the connection goes, then hands it to ``handed_to``, which hears of its end."""

    #: the protocol the connection was handed to (the wrapped factory's, or TLS around it), once it was
    handed_to = None

    def connectionLost(self, reason=protocol.connectionDone):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        if self.handed_to is not None:
            self.handed_to.connectionLost(reason)

    def _abort(self):
        abort = getattr(self.transport, "abortConnection", None) or self.transport.loseConnection
        abort()
