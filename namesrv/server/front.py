"""A factory that stands in front of the remoting factory (TLS sniffing, PROXY headers) and starts and stops with it."""

from twisted.internet import protocol


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
