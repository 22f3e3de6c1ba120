"""Warm restart: the route tables saved to a msgpack file and restored at start.

The Java server forgets every route on restart, so clients get TOPIC_NOT_EXIST until
brokers re-register (up to 30 s). We restore the last snapshot with every broker's
heartbeat set to "now": routes are served at once, and brokers that do not come back
expire by the usual rule. A bad snapshot is logged and ignored, never fatal, and so is
one another instance wrote (``owner``: an InstanceIdentity): its brokers never registered here.
"""

import os

from twisted.internet import threads
from twisted.logger import Logger

from namesrv.storage.atomicfile import write_atomic


class RouteSnapshotFile:
    log = Logger()

    def __init__(self, path, routes, reactor, owner=None):
        self.path = path
        self.routes = routes
        self.owner = owner
        self.reactor = reactor
        self._writing = False

    def restore(self):
        from namesrv.routes.snapshot import SnapshotError, restore_snapshot, snapshot_owner

        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return False
        except OSError as e:
            self.log.warn("route snapshot {path} unreadable, starting empty: {err}", path=self.path, err=e)
            return False
        try:
            writer = snapshot_owner(data)
            if self.owner is not None and not self.owner.owns(writer):
                self.log.warn("route snapshot {path} ignored: written by {writer}, not by this one ({me}); "
                              "starting empty", path=self.path, writer=self.owner.describe(writer),
                              me=self.owner.describe(self.owner.as_record()))
                return False
            restore_snapshot(self.routes, data)
        except SnapshotError as e:
            self.log.warn("route snapshot {path} ignored: {err}", path=self.path, err=e)
            return False
        self.log.info("routes restored from {path}", path=self.path)
        return True

    def _encode(self):
        """The snapshot's bytes, or None (logged) when the tables hold what msgpack cannot carry
        (an integer beyond 64 bits from a broker's body): the previous file stays as it is."""
        from namesrv.routes.snapshot import SnapshotError, encode_snapshot

        try:
            return encode_snapshot(self.routes, self.owner.as_record() if self.owner is not None else None)
        except SnapshotError as e:
            self.log.warn("route snapshot {path} not written: {err}", path=self.path, err=e)
            return None

    def save_in_background(self):
        """Encode on the reactor (tables are only read there), write in a thread."""
        if self._writing:
            return None
        data = self._encode()
        if data is None:
            return None
        self._writing = True
        d = threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), write_atomic, self.path, data)

        def done(result):
            self._writing = False
            return result

        d.addBoth(done)
        d.addErrback(lambda failure: self.log.failure("route snapshot write failed", failure))
        return d

    def save_now(self):
        """Synchronous save for shutdown."""
        data = self._encode()
        if data is None:
            return
        try:
            write_atomic(self.path, data)
        except OSError as e:
            self.log.warn("route snapshot {path} not written: {err}", path=self.path, err=e)
