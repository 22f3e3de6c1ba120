"""The PROXY protocol on a remoting port: the client's address, from a header only a trusted proxy may send.

Off by default (``proxyProtocolEnable``). On, each new connection starts with a ``ProxyHeaderReceiver``:

- From an address in ``proxyProtocolTrustedAddresses`` (the proxies), the connection must begin with
  a v1 or v2 header (proxyheader.py: at most 107 or ``V2_MAX_BYTES`` bytes), complete within
  ``HEADER_TIMEOUT`` seconds; it is then served as coming from the header's source address. A
  header without one (v1 ``UNKNOWN``, v2 ``LOCAL``: HAProxy's health checks) leaves the proxy's own.
  A trusted address that sends anything else is closed, as HAProxy's ``accept-proxy`` and nginx's
  ``proxy_protocol`` listeners close it: served, it would carry the proxy's address into every
  allow-list, so a proxy that lost its ``send-proxy`` would make each of its clients look like the
  proxy. HAProxy's checks send the header too, so the rule costs them nothing.
- From anyone else, the connection is served as without this option, unless it starts with a PROXY
  signature: then it is closed. Java 5.1.4+ believes a header from any peer (apache/rocketmq#6958),
  so anyone who reaches its port can claim an address on its allow-lists.

Each refusal is counted (``counts``, in the metrics) and logged once per peer address and reason
per ``WARNING_WINDOW``, within the house's rate limit. An untrusted peer waits for its first bytes
as long as any connection may stay silent (``serverChannelMaxIdleTimeSeconds``), and this layer
keeps at most 12 of them.

What follows the header goes unchanged to the wrapped factory: TLS sniffing (HAProxy sends the
header, then the client's ClientHello), the controller's member sniffing, the remoting protocol.
That factory builds its protocol only once the header is read, with the header's source as
``buildProtocol``'s address: the remoting protocol takes its ``peer`` from it (what ACL,
``brokerAllowedAddresses``, the event log, the status page and the metrics read) and keeps the
socket's peer as ``via``. The protocol then talks to the socket itself, with no wrapper transport in
between, so a read worker can still hand the socket to the main process (the address travels with
it: readworkers/main/handoff.py). Connections still waiting for their header count towards
``serverMaxConnections``.
"""

from twisted.logger import Logger

from namesrv.protocol.ratelimited import RateLimitedWarning
from namesrv.security.addresses import AddressMatcher
from namesrv.server.front import FrontFactory, FrontProtocol
from namesrv.server.proxyheader import BadHeader, signature_version, split_header

#: seconds a trusted proxy has to send its whole header (HAProxy sends it with its first write)
HEADER_TIMEOUT = 5.0
#: a peer's refusal for one reason is logged once per this many seconds
WARNING_WINDOW = 60.0
#: peers remembered per window (past it, only the rate limit thins the lines)
WARNING_PEERS = 1024
#: every counted outcome: a header with an address (v1, v2) or without (local), no header from an
#: untrusted peer (direct), and the refusals
KINDS = ("v1", "v2", "local", "direct", "untrusted", "missing", "bad", "timeout", "silent", "over_limit")


class ProxyHeaderReceiver(FrontProtocol):
    """One new connection until its header is read (trusted) or its first bytes say it sends none
    (untrusted); then the wrapped factory's protocol, to which every later read goes."""

    def __init__(self, factory, address):
        self.factory = factory
        self.address = address
        self.trusted = factory.trusts(address)
        self.refused = False
        self._buffer = b""

    def callLater(self, period, func):
        return self.factory.clock().callLater(period, func)

    def connectionMade(self):
        timeout = HEADER_TIMEOUT if self.trusted else self.factory.first_byte_timeout()
        if timeout:
            self.setTimeout(timeout)

    def dataReceived(self, data):
        if self.handed_to is not None:
            return self.handed_to.dataReceived(data)
        if self.refused:
            return None
        self._buffer += data
        if self.trusted:
            return self._read_header()
        return self._sniff()

    def _sniff(self):
        version = signature_version(self._buffer)
        if version is None:
            return self._serve(self.address, "direct", self._buffer)
        if version:
            return self._refuse("untrusted", "a PROXY header from an address not in proxyProtocolTrustedAddresses")
        return None   # a prefix of a signature: at most 11 bytes so far

    def _read_header(self):
        try:
            split = split_header(self._buffer)
        except BadHeader as e:
            if signature_version(self._buffer) is None:
                return self._refuse("missing", "no PROXY header from a proxyProtocolTrustedAddresses address")
            return self._refuse("bad", "a bad PROXY header (%s)" % e)
        if split is None:
            return None   # bounded by split_header: a signature's prefix, a v1 line, a v2 header
        header, rest = split
        if header.source is None:
            return self._serve(self.address, "local", rest)
        return self._serve(header.source, "v%d" % header.version, rest)

    def _serve(self, address, kind, rest):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        self._buffer = b""
        inner = self.factory.wrapped.buildProtocol(address)
        if inner is None:   # the wrapped factory's connection limit (it counts it)
            self.refused = True
            return self._abort()
        self.factory.counts[kind] += 1
        self.handed_to = inner
        inner.makeConnection(self.transport)
        if rest and not getattr(self.transport, "disconnecting", False):
            inner.dataReceived(rest)
        return None

    def _refuse(self, kind, why):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        self.refused = True
        self._buffer = b""
        self.factory.refused(kind, self.address, why)
        self._abort()

    def timeoutConnection(self):
        if self.trusted:
            self._refuse("timeout", "no complete PROXY header within %.0f s" % HEADER_TIMEOUT)
        else:
            self.factory.counts["silent"] += 1
            self.factory.pending.discard(self)
            self._abort()



class ProxyHeaderFactory(FrontFactory):
    """Reads PROXY headers in front of ``wrapped`` (the TLS sniffing, member sniffing or remoting
    factory); ``remoting`` is the RemotingServerFactory whose connection limit applies."""

    def __init__(self, wrapped, remoting, trusted, reactor=None):
        FrontFactory.__init__(self, wrapped)
        self.remoting = remoting
        self.trusted = trusted
        self.reactor = reactor
        self.pending = set()
        self.counts = dict.fromkeys(KINDS, 0)
        self._warned = {}
        self._warnings = RateLimitedWarning(Logger("namesrv.server.proxyprotocol"),
                                            clock=lambda: self.clock().seconds())

    def clock(self):
        if self.reactor is None:
            from twisted.internet import reactor   # the global one, only when none was given
            self.reactor = reactor
        return self.reactor

    def first_byte_timeout(self):
        return self.remoting.config.serverChannelMaxIdleTimeSeconds or None

    def trusts(self, address):
        host = getattr(address, "host", None)
        return host is not None and self.trusted.matches(host)

    def buildProtocol(self, addr):
        limit = self.remoting.connection_limit()
        waiting = len(self.pending) + len(getattr(self.wrapped, "pending", ()))
        if limit and len(self.remoting.connections) + waiting >= limit:
            self.counts["over_limit"] += 1
            return None
        receiver = ProxyHeaderReceiver(self, addr)
        self.pending.add(receiver)
        return receiver

    def refused(self, kind, address, why):
        """Count a refusal; log it unless this peer's was logged for ``kind`` in the current window."""
        self.counts[kind] += 1
        host, port = getattr(address, "host", str(address)), getattr(address, "port", "")
        now = self.clock().seconds()
        key = (host, kind)
        last = self._warned.get(key)
        if last is not None and now - last < WARNING_WINDOW:
            return
        if last is None and len(self._warned) >= WARNING_PEERS:
            self._warned = {k: t for k, t in self._warned.items() if now - t < WARNING_WINDOW}
            if len(self._warned) >= WARNING_PEERS:
                return
        self._warned[key] = now
        self._warnings.warn("closing {host}:{port}: {why} ({n} {kind} so far)", host=host, port=port, why=why,
                       n=self.counts[kind], kind=kind)

    def add_counts(self, counts):
        """Add a read worker's counts (the same kinds, on the same port) to ours."""
        for kind, n in counts.items():
            if kind in self.counts and isinstance(n, int):
                self.counts[kind] += n


def trusted_proxies(text):
    """``proxyProtocolTrustedAddresses`` as an AddressMatcher; ValueError names the property when it
    cannot work (a bad pattern, or no address at all: every header would be refused)."""
    try:
        matcher = AddressMatcher.parse(text)
    except ValueError as e:
        raise ValueError("proxyProtocolTrustedAddresses=%s: %s" % (text, e))
    if not matcher:
        raise ValueError("proxyProtocolEnable=true needs proxyProtocolTrustedAddresses: the addresses of the "
                         "proxies whose PROXY header is believed (IPs or CIDRs, e.g. 10.0.0.5,10.0.1.0/24)")
    return matcher


def proxy_protocol_factory(config, wrapped, remoting, reactor=None):
    """``wrapped`` behind PROXY header reading when ``proxyProtocolEnable``, else None."""
    if not config.proxyProtocolEnable:
        return None
    return ProxyHeaderFactory(wrapped, remoting, trusted_proxies(config.proxyProtocolTrustedAddresses), reactor)
