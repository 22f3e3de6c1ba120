"""One one-way request on a connection of its own: what a server tells a broker unasked.

The controller's NOTIFY_BROKER_ROLE_CHANGED (1008) and the name server's NOTIFY_MIN_BROKER_ID_CHANGE
(905) go to the broker's own listening address. Java sends them with ``invokeOneway`` over its
remoting client's pooled channels; here they are rare (one per member per change), so each is a
connection of its own, written and closed, with a connect timeout so that a dead broker never
holds anything up.
"""

from typing import Any, Optional, Tuple

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.protocol import Factory, Protocol

from namesrv.protocol.codec import encode_frame
from namesrv.protocol.command import RemotingCommand

#: Java's remoting client connect timeout (connectTimeoutMillis, 3 s)
CONNECT_TIMEOUT = 3.0


class _OneShot(Protocol):
    """Writes one frame and closes."""

    def __init__(self, frame: bytes) -> None:
        self.frame = frame

    def connectionMade(self) -> None:
        assert self.transport is not None   # connectionMade comes with one
        self.transport.write(self.frame)
        self.transport.loseConnection()


def broker_address(address: Optional[str]) -> Tuple[str, int]:
    """'host:port' as (host, port); ValueError when it is not one."""
    host, colon, port = (address or "").rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("%r is not host:port" % (address,))
    return host, int(port)


def send_oneway(reactor: Any, address: Optional[str], command: RemotingCommand,
                timeout: float = CONNECT_TIMEOUT) -> Deferred:
    """Connect to ``address`` ('host:port'), write ``command`` (a one-way RemotingCommand) and close.

    A Deferred of the connection (cancel it to give up connecting); ValueError, raised, when ``address``
    is not host:port."""
    host, port = broker_address(address)
    frame = encode_frame(command)
    factory = Factory.forProtocol(lambda: _OneShot(frame))
    factory.noisy = False
    return TCP4ClientEndpoint(reactor, host, port, timeout=timeout).connect(factory)
