"""The main process's UNIX sockets a worker connects to, and the first line on each connection.

A forwarded connection (one per client connection that needs the main process) begins
``PEER host:port``: the client's address, for policies, logs and metrics. A hand-off (one
broker's socket, passed with SCM_RIGHTS) begins ``HANDOFF host:port``, then the bytes the
worker read but did not handle; its end marks the end.
"""

from twisted.internet import protocol

from namesrv.unixaddress import socket_address

PEER = b"PEER "
HANDOFF = b"HANDOFF "
#: a first line longer than this is not ours
MAX_LINE = 300


def first_line(kind, peer):
    """``kind`` (PEER or HANDOFF) and ``peer``, as the first line of a connection."""
    return kind + peer.encode("ascii", "replace") + b"\n"


def peer_of(kind, line):
    """The peer a first ``line`` (without its newline) names, or None if it is not a ``kind`` line."""
    if not line.startswith(kind) or len(line) > MAX_LINE:
        return None
    return line[len(kind):].decode("ascii", "replace")


class _OneProtocol(protocol.ClientFactory):
    """Connects one given protocol, and lets go of it once the connection has ended.

    Twisted's connector and client transport refer to each other, and the connector keeps its
    factory: a cycle only the cyclic collector frees. The worker and the main process freeze
    everything the collector tracks (``gc.freeze``) after each publication and each liveness scan,
    so a cycle caught by a freeze is never freed; holding the protocol from it kept every
    handed-over broker's registration bytes (figures: bench/results/design-figures.md#connector-cycle)."""

    noisy = False

    def __init__(self, proto, on_failure):
        self.proto = proto
        self.on_failure = on_failure

    def buildProtocol(self, addr):
        return self.proto

    def clientConnectionFailed(self, connector, reason):
        on_failure = self.on_failure
        self.proto = self.on_failure = None
        if on_failure is not None:
            on_failure(reason)

    def clientConnectionLost(self, connector, reason):
        self.proto = self.on_failure = None


def connect_unix(reactor, path, proto, on_failure, timeout=10):
    """Connect ``proto`` to ``path`` (through a short alias when it is too long for a socket address, as the main
    process listens); ``on_failure(reason)`` if the connection cannot be made."""
    return reactor.connectUNIX(socket_address(path) or path, _OneProtocol(proto, on_failure), timeout=timeout)
