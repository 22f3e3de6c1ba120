"""The main process's side of a read worker's forwarded connection."""

from namesrv.protocol.remoting import RemotingProtocol
from namesrv.readworkers.channel.unix import MAX_LINE, PEER, peer_of
from namesrv.server.factory import RemotingServerFactory


class ForwardedConnection(RemotingProtocol):
    """A client connection accepted by a read worker: frames as usual after one preface line.

    The preface (``PEER host:port``) names the client, so policies, logs and metrics see
    the client's address rather than the worker's socket.
    """

    _preface = b""
    _prefaced = False

    def dataReceived(self, data):
        if self._prefaced:
            return RemotingProtocol.dataReceived(self, data)
        self._preface += data
        line, newline, rest = self._preface.partition(b"\n")
        if not newline:
            if len(self._preface) > MAX_LINE:
                self.bad_frame("forwarded connection without a PEER preface")
            return
        peer = peer_of(PEER, line)
        if peer is None:
            return self.bad_frame("forwarded connection with a bad preface %r" % line[:64])
        self.peer = peer
        self._prefaced = True
        self._preface = b""
        if rest:
            RemotingProtocol.dataReceived(self, rest)


class ForwardedConnectionFactory(RemotingServerFactory):
    """Accepts forwarded connections, with the public factory's dispatcher and housekeeping.

    No idle timeout here: the worker times out the client's connection, which sees all of
    its traffic (a forwarded connection is quiet while the worker answers reads itself).
    """

    protocol_class = ForwardedConnection

    def __init__(self, public_factory):
        RemotingServerFactory.__init__(self, public_factory.dispatcher, public_factory.config,
                                       public_factory.housekeeping, public_factory.events, public_factory.reactor)
        self.public = public_factory

    def idle_timeout(self):
        return None

    def buildProtocol(self, addr):
        self.housekeeping = self.public.housekeeping   # none while the public factory shuts down
        return RemotingServerFactory.buildProtocol(self, addr)
