"""The remoting port and what happens around it: where its socket comes from (new, or a takeover's), the
route tables restored before it listens, the takeover's control socket, and what starts once it serves.

The port, the takeover (namesrv/handover) and the restore need each other: the port's socket may come from
the takeover, the takeover drains and reads the port, and a takeover that finds nothing to take over
restores the snapshot file as a normal start would. They are built together here, each handed the
others as objects.
"""

import gc

from twisted.application import service
from twisted.logger import Logger

from namesrv.handover.coordinator import Handover, ServerParts
from namesrv.server.endpoint import RemotingEndpoint, RemotingPortService

log = Logger()


class ServingSide(service.MultiService):
    """The remoting port as a child service, with the takeover's ``handover`` and the tables' restore.

    ``workers`` (a ReadWorkersService or None) start once the port listens; ``snapshots`` (a
    RouteSnapshotFile or None) restore the tables before it does.
    """

    name = "serving"

    def __init__(self, config, reactor, tables, factory, listen_factory, housekeeping, context, events, readiness,
                 inflight, pool=None, workers=None, snapshots=None, takeover=False):
        service.MultiService.__init__(self)
        self.config = config
        self.reactor = reactor
        self.tables = tables
        self.context = context
        self.events = events
        self.readiness = readiness
        self.pool = pool
        self.workers = workers
        self.snapshots = snapshots
        self._restored = False
        self.handover = Handover(ServerParts(reactor=reactor, config=config, routes=tables.routes, kv=tables.kv,
                                             factory=factory, housekeeping=housekeeping, read_workers=pool,
                                             serving=self, scheduler=context.scheduler),
                                 inflight, takeover=takeover)
        self.endpoint = RemotingEndpoint(
            reactor, config.listenPort, config.bindAddress, config.serverSocketBacklog or 50,
            # exclusive read workers accept on the socket; this process only holds it (see _serving)
            hold=pool is not None and config.routeReadWorkersExclusive,
            inherit=self.handover.take_over if self.handover.takeover else None)
        self.remoting = RemotingPortService(self.endpoint, listen_factory, self._serving, self._takeover_failed)
        self.remoting.setServiceParent(self)

    @property
    def port(self):
        """The remoting port (a RemotingPort) while listening, else None."""
        return self.remoting.port

    @property
    def listen_socket(self):
        port = self.remoting.port
        return port.socket if port is not None else None

    def prepare(self):
        """Before anything of the server starts: the route snapshot, unless a takeover brings the tables."""
        if not self.handover.will_take_over():
            self.restore_routes()

    def restore_routes(self):
        """The route snapshot file, once: sliced (version 3), the broker-level tables now and the topics while
        serving (storage/restoring.py), the file kept open for the first read workers (they restore it too)."""
        snapshots = self.snapshots
        if snapshots is None or self._restored:
            return
        self._restored = True
        snapshots.restore()
        if self.pool is not None and snapshots.baseline is not None:
            self.pool.take_baseline(snapshots.take_baseline())
        snapshots.release_baseline()
        snapshots.continue_restore()
        routes = self.tables.routes
        if routes.broker_addr_table or routes.topic_queue_table:
            # Tables to serve already: accept here until a read worker listens (its first replica takes a
            # moment), so a restarted server answers as soon as it listens. A fresh one has nothing to serve
            # yet: its workers take every connection from the first.
            self.endpoint.accept_here()
        gc.freeze()

    def _serving(self, port):
        """The port listens (a new socket, or a takeover's): start the workers, say so."""
        address = port.getHost()
        self.context.server_id = "%s:%s" % (address.host, address.port)
        self.readiness.serving_address = (address.host, address.port)
        self.events.server_id = self.context.server_id
        log.info("The Name Server boot success. serializeType=JSON, address {addr}", addr=self.context.server_id)
        self.events.emit("server_started", listen=self.context.server_id)
        moving = self.handover.serving()
        if self.workers is None:
            return
        # Exclusive: this process accepts only until a worker does (at start, after a takeover), so that
        # no connection waits in the queue while the workers start; and again while no worker listens
        # after one died (a client would otherwise wait until the replacement has its replica).
        exclusive = self.config.routeReadWorkersExclusive

        def start_workers(result=None):
            if self.running:
                try:
                    self.workers.serve(address.port, port.socket, on_listening=port.hold if exclusive else None,
                                       on_uncovered=port.accept if exclusive else None)
                except Exception:
                    # no worker will accept: this process serves every connection rather than hold them
                    log.failure("namesrv: the route read workers cannot start; this process serves every "
                                "connection itself")
                    if exclusive:
                        port.accept()
            return result
        if moving is None:
            start_workers()
        else:
            # A takeover's clients are paused until their sockets arrive here: the workers (a fork of
            # this process, then a full copy of the tables to feed them) start once they have.
            moving.addBoth(start_workers)

    def _takeover_failed(self, failure):
        log.error("namesrv: takeover failed, not starting: {why}", why=failure.getErrorMessage())
        self.reactor.callLater(0, self.reactor.stop)

    def stopService(self):
        self.readiness.serving_address = None
        return service.MultiService.stopService(self)
