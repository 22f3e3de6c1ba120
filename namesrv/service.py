"""One running NameServer: ``make_service`` builds every part whole, in the order each needs the ones
before; ``NamesrvService`` only orders their start and stop.

The request path the parts make, from bytes to answer, is told once in namesrv/dispatch/chain.py. The
build order::

    event log -> tables (KV store loaded, route tables) -> context (with the process's scheduler)
      -> the embedded controller (enableControllerInNamesrv: its own port) -> ACL file -> processors
      -> the request chain -> remoting factory (with the answer cache) -> TLS -> PROXY headers -> metrics port
      -> status page -> address service -> read workers -> timers -> the serving side (port, takeover)
"""

import gc
import os
from dataclasses import dataclass
from typing import Any

from twisted.application import service
from twisted.internet import defer
from twisted.logger import Logger

from namesrv.addressing.wiring import address_service
from namesrv.context import NamesrvContext
from namesrv.controller.metrics import ControllerCollector
from namesrv.controller.service import ControllerService
from namesrv.dispatch.chain import namesrv_chain
from namesrv.dispatch.registry import load_processor_factories
from namesrv.interfaces import IStoppableProcessor
from namesrv.kvconfig import KVConfigManager
from namesrv.observe.eventlog import event_log_for
from namesrv.observe.health import Readiness
from namesrv.observe.metrics import metrics_port_service
from namesrv.observe.proxy_metrics import add_proxy_protocol_collector
from namesrv.observe.stopwatch import NullStopWatch, stop_children
from namesrv.protocol.answercache import AnswerCache
from namesrv.readworkers.main.processes import ReadWorkerPool
from namesrv.readworkers.main.service import ReadWorkersService
from namesrv.readworkers.worker.guards import worker_arguments
from namesrv.routes import RouteInfoManager
from namesrv.security.wiring import AclFile, GuardListeners, TlsListening
from namesrv.server.factory import RemotingServerFactory
from namesrv.server.housekeeping import BrokerHousekeeping
from namesrv.server.minbrokerid import MinBrokerIdNotifier
from namesrv.server.proxyprotocol import proxy_protocol_factory
from namesrv.server.serving import ServingSide
from namesrv.server.timers import ServerTimers
from namesrv.status.web import status_page_service
from namesrv.storage.instance import InstanceIdentity
from namesrv.storage.snapshotfile import RouteSnapshotFile
from namesrv.timing.clock import MonotonicClock
from namesrv.timing.scheduler import BULK, TurnScheduler

log = Logger()


@dataclass(frozen=True)
class NamesrvParts:
    """Every part of one server, built whole by ``make_service`` (None where a feature is off)."""

    config: Any
    reactor: Any
    events: Any
    tables: Any
    context: Any
    chain: Any
    housekeeping: Any
    factory: Any
    readiness: Any
    serving: Any
    timers: Any
    answer_cache: Any = None
    acl: Any = None
    tls: Any = None
    metrics: Any = None
    status: Any = None
    addresses: Any = None
    controller: Any = None
    pool: Any = None
    workers: Any = None
    snapshots: Any = None
    proxy: Any = None

    def children(self):
        """The child services in start order: the remoting port (in ``serving``) last, stopped first."""
        prober = self.addresses.prober if self.addresses is not None else None
        return [child for child in (self.acl, self.controller, self.tls, self.metrics, self.status, prober,
                                    self.timers, self.workers, self.serving) if child is not None]


class NamesrvService(service.MultiService):
    """The NameServer as an IService: its ``parts``' children start in order (the serving side, last,
    listens) and stop in the reverse one; what must survive is saved before connections close.

    Start-up order follows Java's NamesrvController: the KV file is loaded before this is built (a corrupt
    file refuses to start), the route snapshot is restored at start, then the port listens. ``state_files``
    (the instance's claimed files, namesrv/startup/ownership.py) are held as long as the service lives.
    """

    name = "namesrv"

    def __init__(self, parts, state_files=None, stop_watch=None):
        service.MultiService.__init__(self)
        self.parts = parts
        self.state_files = state_files
        #: reports a stop that takes longer than its bound (observe/stopwatch.py); none in tests
        self.stop_watch = stop_watch if stop_watch is not None else NullStopWatch()
        for child in parts.children():
            child.setServiceParent(self)

    def startService(self):
        self.parts.serving.prepare()   # the route snapshot, unless a takeover brings the tables
        gc.freeze()
        self.parts.events.start()
        self.stop_watch.start(self.parts.reactor)
        service.MultiService.startService(self)

    def stopService(self):
        parts, watch = self.parts, self.stop_watch
        children = stop_children(self, watch)   # the port first, ..., the ACL file last
        stopping = [children, watch.waiting_for("takeover control socket",
                                                defer.maybeDeferred(self.handover.stop_serving))]
        parts.chain.stop()
        # Save before closing connections: closing them is not brokers leaving (those that closed before
        # are forgotten first). After a takeover the tables are the new process's, which saves them itself.
        parts.housekeeping.flush()
        if parts.snapshots is not None and not self.handover.handed_over:
            with watch.part("route snapshot"):
                parts.snapshots.save_now()
        with watch.part("KV file"):
            parts.tables.kv.flush_sync()
        for processor in parts.chain.registry.processors:
            if IStoppableProcessor.providedBy(processor):
                with watch.part("processor " + processor.name):
                    processor.stop()
        parts.factory.close_all()
        # The event log closes after the workers: their last request counts arrive as they exit.
        children.addCallback(self._close_event_log)
        return defer.DeferredList(stopping)

    def _close_event_log(self, ignored=None):
        self.parts.events.emit("server_stopped", listen=self.parts.context.server_id)
        with self.stop_watch.part("event log"):
            self.parts.events.stop()
        log.info("The Name Server stopped{took}", took=self.stop_watch.summary())

    # -- the parts, read-only, for the tools and tests that look inside ---------------------------------
    config = property(lambda self: self.parts.config)
    reactor = property(lambda self: self.parts.reactor)
    events = property(lambda self: self.parts.events)
    context = property(lambda self: self.parts.context)
    routes = property(lambda self: self.parts.tables.routes)
    clock = property(lambda self: self.parts.tables.routes.clock)
    kv = property(lambda self: self.parts.tables.kv)
    chain = property(lambda self: self.parts.chain)
    registry = property(lambda self: self.parts.chain.registry)
    housekeeping = property(lambda self: self.parts.housekeeping)
    factory = property(lambda self: self.parts.factory)
    answer_cache = property(lambda self: self.parts.answer_cache)
    tls = property(lambda self: self.parts.tls)
    proxy = property(lambda self: self.parts.proxy)
    acl = property(lambda self: self.parts.acl)
    controller = property(lambda self: self.parts.controller)
    read_workers = property(lambda self: self.parts.pool)
    workers = property(lambda self: self.parts.workers)
    snapshots = property(lambda self: self.parts.snapshots)
    readiness = property(lambda self: self.parts.readiness)
    handover = property(lambda self: self.parts.serving.handover)
    port = property(lambda self: self.parts.serving.port)
    listen_factory = property(lambda self: self.parts.serving.remoting.factory)
    listen_socket = property(lambda self: self.parts.serving.listen_socket)


class ServerTables:
    """The KV store (loaded: a corrupt file refuses the start) and the route tables of one server."""

    def __init__(self, config, clock, events, reactor, master_hint=None):
        self.kv = KVConfigManager(config.kvConfigPath, reactor=reactor, events=events)
        self.kv.load()
        self.routes = RouteInfoManager(clock=clock, events=events, master_hint=master_hint,
                                       default_heartbeat_timeout_millis=config.brokerChannelExpiredTime,
                                       body_cache_max_bytes=config.routeBodyCacheMaxBytes)
        config.add_listener(lambda *ignored: self.routes.body_cache.set_max_bytes(config.routeBodyCacheMaxBytes))
        # 905 to a group's brokers when its lowest id changes (notifyMinBrokerIdChanged)
        self.min_broker_id = MinBrokerIdNotifier(self.routes, config, reactor, events)


def make_service(config, reactor=None, plugin_package=None, clock=None, events=None, takeover=False,
                 state_files=None, stop_watch=None, force_new_controller_group=False):
    """One NameServer service for ``config``; the options are twistd's (namesrv/tap.py), for a real process."""
    if reactor is None:
        from twisted.internet import reactor   # the one twistd installed: imported only once it has
    clock = clock or MonotonicClock()
    config.pin_instance_paths()
    events = events if events is not None else event_log_for(config, reactor)
    acl, listeners = AclFile.for_config(config, reactor), GuardListeners()
    controller = embedded_controller(config, reactor, events, clock, plugin_package, acl, force_new_controller_group)
    tables = ServerTables(config, clock, events, reactor,
                          master_hint=controller.committed_master_address if controller is not None else None)
    context = NamesrvContext(config=config, routes=tables.routes, kv=tables.kv, reactor=reactor, events=events,
                             server_id="%s:%s" % (config.bindAddress, config.listenPort),
                             scheduler=TurnScheduler.for_config(config, reactor))
    processors = [factory.build(context) for factory in load_processor_factories(plugin_package)]
    chain = namesrv_chain(processors, config, context.scheduler, events, reactor,
                          acl_store=acl.store if acl is not None else None, listeners=[listeners])
    housekeeping = BrokerHousekeeping(tables.routes, events, reactor)
    factory = RemotingServerFactory(chain.entry, config, housekeeping, events, reactor,
                                    answer_cache=answer_cache_for(config, chain.registry, tables, acl))
    tls, readiness = TlsListening.for_config(config, factory, reactor), Readiness()
    proxy = proxy_protocol_factory(config, tls.factory if tls is not None else factory, factory, reactor)
    metrics = metrics_port_service(config, chain, listeners, acl, tls, tables.routes, factory, events, reactor,
                                   readiness) if config.prometheusListenPort else None
    follow_controller(controller, tables.routes, metrics)
    count_proxy_headers(metrics, proxy, controller)
    status = status_page_for(config, tables, chain, events, context, acl, reactor, controller)
    addresses = address_service(config, metrics, clock, reactor)
    pool = read_worker_pool_for(config, tables, chain, factory, tls, metrics, context, reactor, proxy)
    workers = ReadWorkersService(pool) if pool is not None else None
    snapshots = snapshots_for(config, tables.routes, context, reactor)
    serving = ServingSide(config, reactor, tables, factory, listening_factory(factory, tls, proxy), housekeeping,
                          context, events, readiness, chain.inflight, pool, workers, snapshots, takeover)
    timers = ServerTimers(config, reactor, housekeeping, tables.kv, events, snapshots, readiness)
    return NamesrvService(NamesrvParts(
        config, reactor, events, tables, context, chain, housekeeping, factory, readiness, serving, timers,
        answer_cache=factory.answer_cache, acl=acl, tls=tls, metrics=metrics, status=status, addresses=addresses,
        controller=controller, pool=pool, workers=workers, snapshots=snapshots, proxy=proxy), state_files,
        stop_watch)


def listening_factory(factory, tls, proxy):
    """What the remoting port listens with: PROXY headers first, then TLS (server/proxyprotocol.py), then
    the remoting factory, as far as each is on."""
    if proxy is not None:
        return proxy
    return tls.factory if tls is not None else factory


def embedded_controller(config, reactor, events, clock, plugin_package, acl, force_new_group=False):
    """The controller in this process (``enableControllerInNamesrv``), on its own port, or None."""
    if not config.enableControllerInNamesrv:
        if force_new_group:
            raise ValueError("--force-new-controller-group: enableControllerInNamesrv is false, there is no controller")
        return None
    return ControllerService(config, reactor, events, clock=clock, plugin_package=plugin_package, acl=acl,
                             force_new_group=force_new_group)


def follow_controller(controller, routes, metrics):
    """The embedded controller's elections name their masters in ``routes`` at once, and its families join
    the metrics port (``metrics``, or None)."""
    if controller is None:
        return
    controller.follow_elections_in_routes(routes)
    if metrics is not None:
        metrics.metrics.add_collector(ControllerCollector(controller.controller))


def count_proxy_headers(metrics, proxy, controller):
    """What the PROXY headers said on this port and the embedded controller's, on the metrics port (``metrics``,
    or None)."""
    if metrics is not None:
        add_proxy_protocol_collector(metrics.metrics, {
            "namesrv": proxy, "controller": controller.proxy if controller is not None else None})


def status_page_for(config, tables, chain, events, context, acl, reactor, controller):
    """The status page's port (``statusListenPort``), or None."""
    if not config.statusListenPort:
        return None
    return status_page_service(config, tables.routes, tables.kv, chain.registry, events, context,
                               acl.store if acl is not None else None, reactor,
                               controller.controller if controller is not None else None)


def answer_cache_for(config, registry, tables, acl=None):
    """Whole answers for repeated route reads, dropped on any change to what they were built from (the
    credentials too, with ACL on: ``acl``, the AclFile)."""
    if not config.answerCacheEnable:
        return None
    cache = AnswerCache(registry, max_entries=config.answerCacheMaxEntries, max_bytes=config.answerCacheMaxBytes)
    tables.routes.add_change_listener(cache.invalidate)
    tables.kv.change_listeners.append(cache.invalidate)
    config.add_listener(cache.invalidate)
    if acl is not None:
        acl.store.reload_listeners.append(cache.invalidate)
    config.add_listener(lambda *ignored: cache.set_limits(config.answerCacheMaxEntries, config.answerCacheMaxBytes))
    return cache


def read_worker_pool_for(config, tables, chain, factory, tls, metrics, context, reactor, proxy=None):
    """Route read workers on the same port (namesrv/readworkers), when ``routeReadWorkers`` > 0.

    They read PROXY headers, terminate TLS and check ACL signatures themselves, from the same
    properties and files (readworkers/worker/guards.py), so every proxyProtocolEnable, tlsMode and
    aclEnable works with them.
    """
    count = int(config.routeReadWorkers or 0)
    if count <= 0:
        return None
    return ReadWorkerPool(count, routes=tables.routes, kv=tables.kv, config=config, registry=chain.registry,
                          factory=factory, priority=chain.priority, started=context.started, reactor=reactor,
                          scheduler=context.scheduler, tls_factory=tls.factory if tls is not None else None,
                          metrics=metrics.metrics if metrics is not None else None,
                          worker_arguments=worker_arguments(config), proxy_factory=proxy)


def snapshots_for(config, routes, context, reactor):
    """The route snapshot file (a warm restart), when ``routeSnapshotEnable`` and a path are set."""
    if not config.routeSnapshotEnable or not config.routeSnapshotPath:
        return None
    return RouteSnapshotFile(os.path.expanduser(config.routeSnapshotPath), routes, reactor,
                             owner=InstanceIdentity.for_config(config), scheduler=context.scheduler,
                             priority=BULK)
