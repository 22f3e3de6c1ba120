"""One running NameServer: ``make_service`` builds its parts in order, ``NamesrvService`` runs them.

Built in the order each part needs the previous ones, and handed to constructors; nothing
is patched in afterwards::

    event log -> KV store (loaded) -> route tables -> context (with the process's scheduler)
      -> processors (plugins) -> guards (policies, priority dispatcher) -> in-flight counter
      -> answer cache -> remoting factory -> TLS -> metrics -> the controller
      (enableControllerInNamesrv, its own port; its collector on the metrics) -> status page
      -> address service -> read workers (their collector on the metrics) -> the service
"""

import functools
import gc
import os

from twisted.application import service
from twisted.internet import defer
from twisted.logger import Logger

from namesrv.timing.clock import MonotonicClock
from namesrv.context import NamesrvContext
from namesrv.timing.scheduler import BULK, TurnScheduler
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.handover.inflight import InFlightDispatcher
from namesrv.observe.eventlog import event_log_for
from namesrv.observe.health import Readiness
from namesrv.timing.periodic import PeriodicCall
from namesrv.security.wiring import RequestGuards, TlsListening
from namesrv.server.endpoint import RemotingEndpoint, RemotingPortService
from namesrv.server.factory import RemotingServerFactory
from namesrv.server.housekeeping import BrokerHousekeeping

log = Logger()


class NamesrvService(service.MultiService):
    """The NameServer as an IService: start listens, stop undoes it all.

    Start-up order follows Java's NamesrvController: the KV file is loaded before this is built
    (a corrupt file refuses to start), the route snapshot is restored at start, then the port
    listens. Its children, started in this order and stopped in the reverse one: the guards
    (with the ACL watcher), TLS (certificate watcher), the metrics and status ports, the address
    service's prober (namesrv/addressing), the timers
    (PeriodicCall: the liveness scan first after 5 s, the KV print after 1 min, route
    snapshots, the event log's aggregates), the read workers, and last the remoting port.
    """

    name = "namesrv"

    def __init__(self, *, config, reactor, clock, events, kv, routes, context, registry, housekeeping,
                 guards, inflight, factory, answer_cache=None, tls=None, http_ports=(), snapshots=None,
                 read_workers=None, readiness=None, takeover=False, address_service=None,
                 controller=None):
        service.MultiService.__init__(self)
        self.config = config
        self.reactor = reactor
        self.clock = clock
        self.events = events
        self.kv = kv
        self.routes = routes
        self.context = context
        self.registry = registry
        self.housekeeping = housekeeping
        self.security = guards
        self.factory = factory
        self.answer_cache = answer_cache
        self.tls = tls
        self.snapshots = snapshots
        self.read_workers = read_workers
        self.readiness = readiness if readiness is not None else Readiness()
        self.listen_factory = tls.factory if tls is not None else factory
        from namesrv.handover.coordinator import Handover, ServerParts
        #: runs sliced jobs (restoring and writing route snapshots, a takeover's first copy) a step at a time
        #: on the process's one scheduler, after the reads and the brokers' requests of each turn
        self.cooperate = functools.partial(context.scheduler.cooperate, priority=BULK, name="route snapshot")
        self._routes_restored = False
        parts = ServerParts(reactor=reactor, config=config, routes=routes, kv=kv, factory=factory,
                            housekeeping=housekeeping, read_workers=read_workers, port_now=lambda: self.port,
                            running_now=lambda: self.running, cooperate=self.cooperate,
                            restore_routes=self.restore_routes)
        self.handover = Handover(parts, inflight, takeover=takeover)

        guards.setServiceParent(self)
        #: the embedded controller (namesrv/controller/service.py), when enableControllerInNamesrv
        self.controller = controller
        if controller is not None:
            controller.setServiceParent(self)
        if tls is not None:
            tls.setServiceParent(self)
        for http in http_ports:
            http.setServiceParent(self)
        self.address_service = address_service   # namesrv/addressing: its prober probes while we run
        if address_service is not None:
            address_service.prober.setServiceParent(self)
        self._scan = self._every("liveness scan", self._scan_not_active_brokers,
                                 lambda: config.scanNotActiveBrokerInterval / 1000.0, 5)
        self._every("KV print", self.kv.print_all, lambda: config.kvConfigPrintInterval, 60)
        if snapshots is not None:
            self._every("route snapshot", self._save_snapshot, lambda: config.routeSnapshotInterval,
                        config.routeSnapshotInterval)
        self._every("event log aggregates", self.events.flush_aggregates, lambda: 1.0, 1.0)
        self.workers = None
        if read_workers is not None:
            from namesrv.readworkers.main.service import ReadWorkersService
            self.workers = ReadWorkersService(read_workers)
            self.workers.setServiceParent(self)
        self.remoting = RemotingPortService(self._endpoint(), self.listen_factory, self._serving,
                                            self._takeover_failed)
        self.remoting.setServiceParent(self)
        config.add_listener(self._config_changed)

    @property
    def port(self):
        """The remoting port (a RemotingPort) while listening, else None."""
        return self.remoting.port

    @property
    def listen_socket(self):
        port = self.remoting.port
        return port.socket if port is not None else None

    def _endpoint(self):
        config = self.config
        return RemotingEndpoint(
            self.reactor, config.listenPort, config.bindAddress, config.serverSocketBacklog or 50,
            # exclusive read workers accept on the socket; this process only holds it (see startService)
            hold=self.read_workers is not None and config.routeReadWorkersExclusive,
            inherit=self.handover.take_over if self.handover.takeover else None)

    # -- lifecycle -------------------------------------------------------------
    def startService(self):
        if not self.handover.will_take_over():   # else the tables come from the process taken over
            self.restore_routes()
        gc.freeze()
        self.events.start()
        service.MultiService.startService(self)   # the guards first, the remoting port last

    def restore_routes(self):
        """The route snapshot file, once: sliced (version 3), the broker-level tables now and the topics while
        serving (storage/restoring.py), the file kept open for the first read workers (they restore it too)."""
        if self.snapshots is None or self._routes_restored:
            return
        self._routes_restored = True
        self.snapshots.restore()
        if self.read_workers is not None and self.snapshots.baseline is not None:
            self.read_workers.baseline, self.snapshots.baseline = self.snapshots.baseline, None
        self.snapshots.release_baseline()
        self.snapshots.continue_restore()
        if self.routes.broker_addr_table or self.routes.topic_queue_table:
            # Tables to serve already: accept here until a read worker listens (its first replica takes a
            # moment), so a restarted server answers as soon as it listens. A fresh one has nothing to serve
            # yet: its workers take every connection from the first.
            self.remoting.endpoint.hold = False
        gc.freeze()

    def _serving(self, port):
        """The port listens (a new socket, or a takeover's): start the workers, say so."""
        address = port.getHost()
        self.context.server_id = "%s:%s" % (address.host, address.port)
        self.readiness.serving_address = (address.host, address.port)
        self.events.server_id = self.context.server_id
        log.info("The Name Server boot success. serializeType=JSON, address {addr}",
                 addr=self.context.server_id)
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
                self.workers.serve(address.port, port.socket, on_listening=port.hold if exclusive else None,
                                   on_uncovered=port.accept if exclusive else None)
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

    def _every(self, name, function, interval, first_delay):
        """A child timer: ``function`` every ``interval()`` seconds, the first after ``first_delay``."""
        timer = PeriodicCall(name, function, interval, first_delay, self.reactor)
        timer.setServiceParent(self)
        return timer

    def stopService(self):
        self.readiness.serving_address = None
        # the port, the read workers (fires once they have ended), the timers, ..., the guards
        children = service.MultiService.stopService(self)
        stopping = [children, defer.maybeDeferred(self.handover.stop)]
        # Save before closing connections: closing them is not brokers leaving (those that closed
        # before are forgotten first). After a takeover the tables are the new process's, which
        # saves them itself.
        self.housekeeping.flush()
        if self.snapshots is not None and not self.handover.handed_over:
            self.snapshots.save_now()
        self.kv.flush_sync()
        for processor in self.registry.processors:
            stop = getattr(processor, "stop", None)  # optional: processors with state to flush
            if stop is not None:
                stop()
        self.factory.close_all()
        # The event log closes after the workers: their last request counts arrive as they exit.
        children.addCallback(self._close_event_log)
        return defer.DeferredList(stopping)

    def _close_event_log(self, ignored=None):
        self.events.emit("server_stopped", listen=self.context.server_id)
        self.events.stop()
        log.info("The Name Server stopped")

    # -- timers ------------------------------------------------------------------
    def _scan_not_active_brokers(self):
        self.housekeeping.scan_not_active_brokers()
        # Route tables are long-lived: moving them out of the collector's reach keeps full
        # collections (bench/results/design-figures.md#frozen-tables) off the reactor thread.
        gc.freeze()

    def _save_snapshot(self):
        """Only while serving: during a takeover the tables are not ours yet (an empty copy must
        never replace the last good snapshot)."""
        if self.readiness.serving_address is not None:
            return self.snapshots.save_in_background()

    def _config_changed(self, name, old, new):
        if name == "scanNotActiveBrokerInterval":
            self._scan.restart()


def make_service(config, reactor=None, plugin_package=None, clock=None, events=None, takeover=False,
                 force_new_controller_group=False):
    """The tap-style factory: one NameServer service for ``config`` (``takeover``: namesrv/handover;
    ``force_new_controller_group``: namesrv/controller/replication/fencing.py)."""
    from namesrv.kvconfig import KVConfigManager
    from namesrv.routes import RouteInfoManager
    if reactor is None:
        from twisted.internet import reactor
    clock = clock or MonotonicClock()
    config.pin_instance_paths()
    events = events if events is not None else event_log_for(config, reactor)
    kv = KVConfigManager(config.kvConfigPath, reactor=reactor, events=events)
    kv.load()
    routes = RouteInfoManager(clock=clock, events=events,
                              default_heartbeat_timeout_millis=config.brokerChannelExpiredTime,
                              body_cache_max_bytes=config.routeBodyCacheMaxBytes)
    config.add_listener(lambda *ignored: routes.body_cache.set_max_bytes(config.routeBodyCacheMaxBytes))
    context = NamesrvContext(config=config, routes=routes, kv=kv, reactor=reactor, events=events,
                             server_id="%s:%s" % (config.bindAddress, config.listenPort),
                             scheduler=TurnScheduler.for_config(config, reactor))
    registry = ProcessorRegistry.from_plugins(context, plugin_package)
    guards = RequestGuards(config, registry, reactor, context.scheduler)
    inflight = InFlightDispatcher(guards.dispatcher)   # a takeover waits for the answers it counts
    answer_cache = _make_answer_cache(config, registry, routes, kv)
    housekeeping = BrokerHousekeeping(routes, events, reactor)
    factory = RemotingServerFactory(inflight, config, housekeeping, events, reactor, answer_cache=answer_cache)
    tls = TlsListening.for_config(config, factory, reactor)
    readiness = Readiness()
    http_ports = []
    metrics = None
    if config.prometheusListenPort:
        from namesrv.observe.metrics import metrics_port_service
        metrics = metrics_port_service(config, guards, tls, routes, factory, events, registry, reactor, readiness)
        http_ports.append(metrics)
    controller = _make_controller(config, reactor, events, clock, plugin_package, metrics, force_new_controller_group)
    if controller is not None:
        # a slave whose master registered only with the other name servers yet is told of it (registration.py)
        routes.registrations.master_hint = controller.committed_master_address
        # and producers are routed to a master the controllers elected before it registers as one
        controller.follow_elections_in_routes(routes)
    if config.statusListenPort:
        from namesrv.status.web import status_page_service
        http_ports.append(status_page_service(config, routes, kv, registry, events, context, guards.acl_store,
                                              reactor, controller.controller if controller is not None else None))
    from namesrv.addressing.wiring import address_service
    addresses = address_service(config, metrics, clock, reactor)
    return NamesrvService(
        config=config, reactor=reactor, clock=clock, events=events, kv=kv, routes=routes, context=context,
        registry=registry, housekeeping=housekeeping, guards=guards, inflight=inflight, factory=factory,
        answer_cache=answer_cache, tls=tls, http_ports=http_ports, snapshots=_make_snapshotter(config, routes, context, reactor),
        read_workers=_make_read_workers(config, routes, kv, registry, factory, guards, tls, metrics, context, reactor),
        readiness=readiness, takeover=takeover, address_service=addresses, controller=controller)


def _make_controller(config, reactor, events, clock, plugin_package, metrics_port, force_new_group=False):
    """The embedded controller (RIP-44) on its own port, when ``enableControllerInNamesrv``, with its
    families on the metrics port (``metrics_port``, or None)."""
    if not config.enableControllerInNamesrv:
        if force_new_group:
            raise ValueError("--force-new-controller-group: enableControllerInNamesrv is false, there is no controller")
        return None
    from namesrv.controller.service import ControllerService
    controller = ControllerService(config, reactor, events, clock=clock, plugin_package=plugin_package,
                                   force_new_group=force_new_group)
    if metrics_port is not None:
        from namesrv.controller.metrics import ControllerCollector
        metrics_port.metrics.add_collector(ControllerCollector(controller.controller))
    return controller


def _make_answer_cache(config, registry, routes, kv):
    """Whole answers for repeated route reads, dropped on any change to what they were built from."""
    if not config.answerCacheEnable:
        return None
    from namesrv.protocol.answercache import AnswerCache
    cache = AnswerCache(registry, max_entries=config.answerCacheMaxEntries, max_bytes=config.answerCacheMaxBytes)
    registry.change_listeners.append(cache.invalidate)
    routes.add_change_listener(cache.invalidate)
    kv.change_listeners.append(cache.invalidate)
    config.add_listener(cache.invalidate)
    config.add_listener(lambda *ignored: cache.set_limits(config.answerCacheMaxEntries, config.answerCacheMaxBytes))
    return cache


def _make_read_workers(config, routes, kv, registry, factory, guards, tls, metrics, context, reactor):
    """Route read workers on the same port (namesrv/readworkers), when ``routeReadWorkers`` > 0.

    They terminate TLS and check ACL signatures themselves, from the same files
    (readworkers/worker/guards.py), so every tlsMode and aclEnable works with them.
    """
    count = int(config.routeReadWorkers or 0)
    if count <= 0:
        return None
    from namesrv.readworkers.main.processes import ReadWorkerPool
    from namesrv.readworkers.worker.guards import worker_arguments
    return ReadWorkerPool(count, routes=routes, kv=kv, config=config, registry=registry, factory=factory,
                          holds=guards.dispatcher.holds, started=context.started, reactor=reactor,
                          scheduler=context.scheduler,
                          tls_factory=tls.factory if tls is not None else None,
                          metrics=metrics.metrics if metrics is not None else None,
                          worker_arguments=worker_arguments(config))


def _make_snapshotter(config, routes, context, reactor):
    if not config.routeSnapshotEnable or not config.routeSnapshotPath:
        return None
    from namesrv.storage.snapshotfile import RouteSnapshotFile
    from namesrv.storage.instance import InstanceIdentity
    return RouteSnapshotFile(os.path.expanduser(config.routeSnapshotPath), routes, reactor,
                             owner=InstanceIdentity.for_config(config),
                             cooperate=functools.partial(context.scheduler.cooperate, priority=BULK,
                                                         name="route snapshot"))
