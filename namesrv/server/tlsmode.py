"""TLS on the remoting port, as RocketMQ's ``tls.server.mode`` defines it: disabled, permissive, enforcing.

Java's ``HandshakeHandler`` looks at the first byte a client sends: 0x16 (a TLS handshake
record) starts TLS, anything else is plain remoting. ``disabled`` closes TLS clients,
``enforcing`` closes plain ones, ``permissive`` serves both on one port. We do the same by
wrapping the remoting factory: each connection starts as a ``SniffingProtocol`` that builds
the remoting protocol at once (so ``serverMaxConnections`` still refuses at accept time)
but connects it only when the first byte has arrived, directly or through a
``TLSMemoryBIOProtocol``. Connections still waiting for their first byte count towards
``serverMaxConnections``, and a peer that sends nothing is closed after
``serverChannelMaxIdleTimeSeconds`` (the remoting protocol's own idle timer has not started).

Java's default mode is ``permissive`` with a test-mode self-signed certificate; ours is
``disabled`` (no certificate to manage unless asked).
"""

from twisted.logger import Logger

from namesrv.server.front import FrontFactory, FrontProtocol

log = Logger()

DISABLED = "disabled"
PERMISSIVE = "permissive"
ENFORCING = "enforcing"
MODES = (DISABLED, PERMISSIVE, ENFORCING)

HANDSHAKE_MAGIC = 0x16


def parse_mode(text):
    mode = (text or DISABLED).strip().lower()
    if mode not in MODES:
        raise ValueError("tlsMode=%r: expected one of %s" % (text, ", ".join(MODES)))
    return mode


class SniffingProtocol(FrontProtocol):
    """Holds a connection until its first byte says TLS or plain, then gets out of the way."""

    def __init__(self, factory, inner):
        self.factory = factory
        self.inner = inner

    def callLater(self, period, func):
        reactor = self.factory.reactor
        if reactor is None:
            from twisted.internet import reactor   # the global one, only when none was given
        return reactor.callLater(period, func)

    def connectionMade(self):
        timeout = self.factory.first_byte_timeout()
        if timeout:
            self.setTimeout(timeout)

    def dataReceived(self, data):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        tls = data[0] == HANDSHAKE_MAGIC
        mode = self.factory.mode
        if tls and mode == DISABLED:
            return self._refuse("refused_tls", "a TLS handshake while tlsMode=disabled")
        if not tls and mode == ENFORCING:
            return self._refuse("refused_plain", "a plain connection while tlsMode=enforcing")
        self.factory.counts["tls" if tls else "plain"] += 1
        if tls:
            self.handed_to = self.factory.tls_protocol(self.inner)
        else:
            self.handed_to = self.inner
        self.handed_to.makeConnection(self.transport)
        # From now on the transport calls the target directly (no per-read indirection).
        self.dataReceived = self.handed_to.dataReceived
        self.handed_to.dataReceived(data)

    def _refuse(self, kind, what):
        self.factory.counts[kind] += 1
        n = self.factory.counts[kind]
        if n == 1 or n % 1000 == 0:
            peer = self.transport.getPeer()
            log.warn("closing {host}:{port}: {what} ({n} so far)", host=getattr(peer, "host", peer),
                     port=getattr(peer, "port", ""), what=what, n=n)
        self.transport.loseConnection()

    def timeoutConnection(self):
        self.factory.counts["silent"] += 1
        self._abort()


class TlsSniffingFactory(FrontFactory):
    """Wraps the remoting factory for ``mode`` (permissive or enforcing; disabled only refuses TLS)."""

    def __init__(self, wrapped, mode, material=None, config=None, reactor=None):
        FrontFactory.__init__(self, wrapped)
        self.mode = parse_mode(mode)
        self.material = material
        self.config = config if config is not None else getattr(wrapped, "config", None)
        self.reactor = reactor
        self.counts = {"tls": 0, "plain": 0, "refused_tls": 0, "refused_plain": 0, "silent": 0}
        self.pending = set()
        self._tls_factory = None
        self._tls_generation = None
        if self.mode != DISABLED and (material is None or material.options is None):
            raise ValueError("tlsMode=%s needs loaded TLS material" % self.mode)

    def first_byte_timeout(self):
        return self.config.serverChannelMaxIdleTimeSeconds or None

    def add_counts(self, counts):
        """Add another listener's connection counts (a read worker's, on the same port) to ours."""
        for kind, n in counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + n

    def buildProtocol(self, addr):
        limit = self.config.serverMaxConnections
        if limit and len(getattr(self.wrapped, "connections", ())) + len(self.pending) >= limit:
            self.counts["over_limit"] = self.counts.get("over_limit", 0) + 1
            return None
        inner = self.wrapped.buildProtocol(addr)
        if inner is None:
            return None
        sniffer = SniffingProtocol(self, inner)
        self.pending.add(sniffer)
        return sniffer

    def tls_protocol(self, inner):
        from twisted.protocols.tls import TLSMemoryBIOProtocol   # pyOpenSSL: only when TLS is on
        return TLSMemoryBIOProtocol(self._current_tls_factory(), inner)

    def _current_tls_factory(self):
        """One TLSMemoryBIOFactory per certificate generation: a reload serves new connections only."""
        from twisted.protocols.tls import TLSMemoryBIOFactory   # pyOpenSSL: only when TLS is on
        if self._tls_generation != self.material.generation:
            self._tls_factory = TLSMemoryBIOFactory(self.material.options, False, self.wrapped,
                                                    clock=self.reactor)
            self._tls_generation = self.material.generation
        return self._tls_factory
