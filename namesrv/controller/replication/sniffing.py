"""The controller port's first bytes decide: a member (``members.PREFIX``) or a RocketMQ client.

A RocketMQ frame starts with its length, whose first byte is 0 for any frame under 16 MiB, so the
first byte alone tells a client at once; a member's prefix is then checked whole, and its version
byte by the member link (which answers a peer of another version with its own).

Every connection counts towards ``serverMaxConnections``: clients, connections still silent, and
member links, whether authenticated or still in their handshake. Connections that sent the member
prefix but have not finished the handshake are also capped on their own
(``controllerMemberMaxPendingHandshakes``), and each has ``members.HANDSHAKE_TIMEOUT`` to finish. When
that cap is reached, a new one is closed at once, unless it comes from the host of a configured
member, which then takes the place of the oldest pending one from any other host: a flood of
magic-only connections costs descriptors for a few seconds each, never the port's clients, and never
the real members' links.
"""

from collections import OrderedDict

from twisted.internet import protocol
from twisted.protocols.policies import TimeoutMixin

from namesrv.controller.replication.members import PREFIX


class MemberSniffer(protocol.Protocol, TimeoutMixin):
    """One accepted connection until its first bytes say what it is, then the protocol it became.

    The remoting protocol is built at accept time (so ``serverMaxConnections`` refuses there) and
    connected once the first byte says it is a client; until then the connection has
    ``serverChannelMaxIdleTimeSeconds`` to say anything.
    """

    def __init__(self, factory, addr, inner):
        self.factory = factory
        self.addr = addr
        self.inner = inner
        self._buffer = b""
        self.target = None
        self.member = None         # the MemberLink this connection became, if it is one

    def callLater(self, period, func):
        return self.factory.reactor.callLater(period, func)

    @property
    def host(self):
        return getattr(self.addr, "host", "?")

    def connectionMade(self):
        timeout = self.factory.first_byte_timeout()
        if timeout:
            self.setTimeout(timeout)

    def dataReceived(self, data):
        self._buffer += data
        if self._buffer[:1] != PREFIX[:1]:
            return self._become(self.inner)
        if len(self._buffer) < len(PREFIX):
            return None
        if self._buffer[:len(PREFIX)] != PREFIX:
            self.factory.members.refusals.refused(self.host, "not a controller member")
            return self._close()
        link = self.factory.member_link(self)
        if link is None:
            return self._close()
        self.member = link
        return self._become(link)

    def _become(self, target):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        if target is None:
            return self._close()
        self.target = target
        data, self._buffer = self._buffer, b""
        target.makeConnection(self.transport)
        self.dataReceived = target.dataReceived
        if data and self.transport is not None and not getattr(self.transport, "disconnecting", False):
            target.dataReceived(data)
        return None

    def _close(self):
        abort = getattr(self.transport, "abortConnection", None) or self.transport.loseConnection
        abort()

    def timeoutConnection(self):
        self._close()

    def connectionLost(self, reason=protocol.connectionDone):
        self.setTimeout(None)
        self.factory.pending.discard(self)
        self.factory.member_closed(self)
        if self.target is not None:
            self.target.connectionLost(reason)


class MemberSniffingFactory(protocol.Factory):
    """The controller port: RocketMQ clients go to ``remoting``, members to ``members.accept()``."""

    noisy = False

    def __init__(self, remoting, members, reactor, max_pending=16):
        self.remoting = remoting
        self.members = members
        self.reactor = reactor
        self.max_pending = max_pending
        self.pending = set()                 # sniffers still waiting for their first bytes
        self.member_connections = OrderedDict()   # sniffer -> None, oldest first: connections that became links
        self.refused_handshakes = 0

    def first_byte_timeout(self):
        return self.remoting.config.serverChannelMaxIdleTimeSeconds or None

    def doStart(self):
        self.remoting.doStart()

    def doStop(self):
        self.remoting.doStop()

    def open_connections(self):
        return len(self.remoting.connections) + len(self.pending) + len(self.member_connections)

    def handshaking(self):
        return [s for s in self.member_connections if not s.member.up]

    def buildProtocol(self, addr):
        limit = self.remoting.connection_limit()
        if limit and self.open_connections() >= limit:
            self.remoting.refused += 1
            return None
        inner = self.remoting.buildProtocol(addr)
        if inner is None:
            return None
        sniffer = MemberSniffer(self, addr, inner)
        self.pending.add(sniffer)
        return sniffer

    def member_link(self, sniffer):
        """A MemberLink for a connection that sent the member prefix, or None when too many handshakes are
        under way (the oldest one from a stranger makes room for a configured member's host)."""
        handshaking = self.handshaking()
        if len(handshaking) >= self.max_pending:
            strangers = [s for s in handshaking if not self._member_host(s.host)]
            if not self._member_host(sniffer.host) or not strangers:
                self.refused_handshakes += 1
                self.members.refusals.refused(sniffer.host, "too many member handshakes under way (%d, "
                                              "controllerMemberMaxPendingHandshakes)" % self.max_pending)
                return None
            self.refused_handshakes += 1
            strangers[0].member.close()
        link = self.members.accept()
        if link is not None:
            self.member_connections[sniffer] = None
        return link

    def _member_host(self, host):
        hosts = getattr(self.members, "member_hosts", None)
        return hosts is not None and host in hosts()

    def member_closed(self, sniffer):
        self.member_connections.pop(sniffer, None)
