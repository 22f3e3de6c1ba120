"""NOTIFY_BROKER_ROLE_CHANGED (1008): telling a broker who its group's master is now.

Java sends it one-way over a connection to the broker's own listening address and keeps, per
broker, only the newest notification: one for an older master epoch still being sent is
cancelled. The same here, on the reactor, each notification on a connection of its own
(namesrv/protocol/oneway.py).
"""

from collections.abc import Mapping

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTCP
from twisted.python.failure import Failure
from twisted.logger import Logger

from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request
from namesrv.protocol.oneway import send_oneway


class RoleChangeNotifier:
    log = Logger()

    def __init__(self, reactor: IReactorTCP) -> None:
        self.reactor = reactor
        #: address -> (master epoch, Deferred of the connection)
        self._pending: dict[str, tuple[int, defer.Deferred[bool]]] = {}
        self.sent = 0
        self.failed = 0

    def notify(self, address: str, header: Mapping[str, object], body: bytes,
               master_epoch: int) -> defer.Deferred[bool]:
        """Send one notification to ``address`` ('host:port'); returns a Deferred (never failing)."""
        old = self._pending.get(address)
        if old is not None and master_epoch > old[0]:
            old[1].cancel()
        try:
            d = send_oneway(self.reactor, address, make_request(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, ext=header,
                                                                body=body, oneway=True))
        except ValueError:
            self.failed += 1
            self.log.error("controller: cannot notify {addr}: not host:port", addr=address)
            return defer.succeed(False)
        self._pending[address] = (master_epoch, d)

        def done(result: bool) -> bool:
            if self._pending.get(address, (None, None))[1] is d:
                del self._pending[address]
            return result

        def sent(_: object) -> bool:
            self.sent += 1
            self.log.info("controller: told {addr} its group's master is {master} (epoch {epoch})", addr=address,
                          master=header.get("masterAddress"), epoch=master_epoch)
            return True

        def failed(failure: Failure) -> bool:
            if failure.check(defer.CancelledError):
                return False
            self.failed += 1
            self.log.warn("controller: notifying {addr} of its role failed: {why}", addr=address,
                          why=failure.getErrorMessage())
            return False
        d.addCallbacks(sent, failed)
        d.addBoth(done)
        return d
