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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

from twisted.internet import protocol
from twisted.internet.interfaces import IAddress, IDelayedCall
from twisted.protocols.policies import TimeoutMixin
from twisted.python.failure import Failure

from namesrv.controller.replication.members import PREFIX, MemberLink

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.mesh import MemberMesh
    from namesrv.server.factory import RemotingServerFactory


class MemberSniffer(protocol.Protocol, TimeoutMixin):
    """One accepted connection until its first bytes say what it is, then the protocol it became.

    The remoting protocol is built at accept time (so ``serverMaxConnections`` refuses there) and
    connected once the first byte says it is a client; until then the connection has
    ``serverChannelMaxIdleTimeSeconds`` to say anything.
    """

    def __init__(self, factory: "MemberSniffingFactory", addr: Optional[IAddress], inner: protocol.Protocol) -> None:
        self.factory = factory
        self.addr = addr
        self.inner = inner
        self._buffer = b""
        self.target: Optional[protocol.Protocol] = None
        self.member: Optional[MemberLink] = None         # the MemberLink this connection became, if it is one

    def callLater(self, period: float, func: Callable[[], object]) -> IDelayedCall:
        return self.factory.reactor.callLater(period, func)

    @property
    def host(self) -> str:
        return getattr(self.addr, "host", "?")

    def connectionMade(self) -> None:
        timeout = self.factory.first_byte_timeout()
        if timeout:
            self.setTimeout(timeout)

    def dataReceived(self, data: bytes) -> None:
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

    def _become(self, target: Optional[protocol.Protocol]) -> None:
        self.setTimeout(None)
        self.factory.pending.discard(self)
        if target is None:
            return self._close()
        self.target = target
        data, self._buffer = self._buffer, b""
        target.makeConnection(self.transport)
        self.dataReceived = target.dataReceived     # type: ignore[method-assign]  # the bytes go straight on
        if data and self.transport is not None and not getattr(self.transport, "disconnecting", False):
            target.dataReceived(data)
        return None

    def _close(self) -> None:
        transport = self.transport
        assert transport is not None        # it closes a connection that is open
        abort = getattr(transport, "abortConnection", None) or transport.loseConnection
        abort()

    def timeoutConnection(self) -> None:
        self._close()

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.setTimeout(None)
        self.factory.pending.discard(self)
        self.factory.member_closed(self)
        if self.target is not None:
            self.target.connectionLost(reason)


class MemberSniffingFactory(protocol.Factory):
    """The controller port: RocketMQ clients go to ``remoting``, members to ``members.accept()``."""

    noisy = False

    def __init__(self, remoting: "RemotingServerFactory", members: "MemberMesh", reactor: Any,
                 max_pending: int = 16) -> None:
        # ``reactor``: Any, the one the port runs on (its callLater); the remoting factory's own
        self.remoting = remoting
        self.members = members
        self.reactor = reactor
        self.max_pending = max_pending
        self.pending: set[MemberSniffer] = set()                 # sniffers still waiting for their first bytes
        #: sniffer -> None, oldest first: connections that became links
        self.member_connections: OrderedDict[MemberSniffer, None] = OrderedDict()
        self.refused_handshakes = 0

    def first_byte_timeout(self) -> Optional[float]:
        return self.remoting.config.serverChannelMaxIdleTimeSeconds or None

    def doStart(self) -> None:
        self.remoting.doStart()

    def doStop(self) -> None:
        self.remoting.doStop()

    def open_connections(self) -> int:
        return len(self.remoting.connections) + len(self.pending) + len(self.member_connections)

    def handshaking(self) -> list[MemberSniffer]:
        return [s for s in self.member_connections if not _link(s).up]

    def buildProtocol(self, addr: Optional[IAddress]) -> Optional[MemberSniffer]:
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

    def member_link(self, sniffer: MemberSniffer) -> Optional[MemberLink]:
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
            _link(strangers[0]).close()
        link = self.members.accept()
        if link is not None:
            self.member_connections[sniffer] = None
        return link

    def _member_host(self, host: str) -> bool:
        hosts = getattr(self.members, "member_hosts", None)
        return hosts is not None and host in hosts()

    def member_closed(self, sniffer: MemberSniffer) -> None:
        self.member_connections.pop(sniffer, None)


def _link(sniffer: MemberSniffer) -> MemberLink:
    """The link of a sniffer in ``member_connections`` (each is there only once it became one)."""
    assert sniffer.member is not None
    return sniffer.member
