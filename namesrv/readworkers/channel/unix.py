"""Connect one already-built protocol to a UNIX socket of the main process."""

from twisted.internet import protocol


class _OneProtocol(protocol.ClientFactory):
    noisy = False

    def __init__(self, proto, on_failure):
        self.proto = proto
        self.on_failure = on_failure

    def buildProtocol(self, addr):
        return self.proto

    def clientConnectionFailed(self, connector, reason):
        self.on_failure(reason)


def connect_unix(reactor, path, proto, on_failure, timeout=10):
    """Connect ``proto`` to ``path``; ``on_failure(reason)`` if the connection cannot be made."""
    return reactor.connectUNIX(path, _OneProtocol(proto, on_failure), timeout=timeout)
