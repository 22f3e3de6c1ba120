"""One kept connection per listed name server, which the address service's probes reuse.

A probe on a new connection every 2 s is a connection opened and closed every 2 s on every listed
server: each one logs it (Java's ``channelInactive`` line, our ``channel_closed`` event), and in four
minutes 120 such closes had pushed a real broker's unregistration off the status page's recent
events. A client keeps its connection; so does the prober. A probe is still one real request
answered within the timeout, and a connection that failed one (no answer in time, reset, refused)
is dropped, so the next probe opens a new one and proves the server still accepts: a hung process
whose kernel still accepts is caught by the request's timeout either way. Java NameServers close a
connection idle for 120 s; the probes keep it busy.
"""

from twisted.internet import defer
from twisted.logger import Logger

from namesrv.client import connect
from namesrv.protocol.command import make_request

log = Logger()


class ProbeConnections:
    """``probe(reactor, host, port, timeout, code)`` as ``namesrv.observe.health.probe`` takes it, on kept
    connections; ``close_all()`` when the prober stops."""

    def __init__(self, connect=connect):
        self._connect = connect
        self.connections = {}   # (host, port) -> connected RemotingClientProtocol

    @defer.inlineCallbacks
    def probe(self, reactor, host, port, timeout, code):
        """The milliseconds one request ``code`` took; raises when none came within ``timeout``."""
        started = reactor.seconds()
        key = (host, port)
        client = self.connections.get(key)
        if client is None:
            client = yield self._connect(reactor, host, port).addTimeout(timeout, reactor)
            self.connections[key] = client
            client.closed.addCallback(lambda ignored: self._forget(key, client))
        request = make_request(code)
        try:
            remaining = max(0.1, timeout - (reactor.seconds() - started))
            yield client.call(request).addTimeout(remaining, reactor)
        except Exception:
            client.pending.pop(request.opaque, None)   # cancelled by the timeout: nobody waits for it
            self.drop(key)
            raise
        return (reactor.seconds() - started) * 1000.0

    def _forget(self, key, client):
        if self.connections.get(key) is client:
            del self.connections[key]

    def drop(self, key):
        client = self.connections.pop(key, None)
        if client is not None and client.transport is not None:
            client.transport.abortConnection()

    def close_all(self):
        for key in list(self.connections):
            client = self.connections.pop(key)
            if client.transport is not None:
                client.transport.loseConnection()
