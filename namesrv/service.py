"""Builds one running NameServer from a NamesrvConfig: tables, processors, port, timers."""

import gc
import os

from twisted.application import service
from twisted.internet import defer
from twisted.logger import Logger

from namesrv.clock import MonotonicClock
from namesrv.context import NamesrvContext, NullEventLog
from namesrv.observe.health import Readiness
from namesrv.periodic import PeriodicCall
from namesrv.server.housekeeping import BrokerHousekeeping
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.security.wiring import secure_service
from namesrv.server.factory import RemotingServerFactory

log = Logger()


class NamesrvService(service.MultiService):
    """The NameServer as an IService: start listens, stop undoes it all.

    Start-up order follows Java's NamesrvController: load the KV file (a corrupt file
    refuses to start), restore the route snapshot, then listen. Its children: the security
    services (file watchers, the metrics and status ports) and the timers (PeriodicCall:
    the liveness scan first after 5 s, the KV print after 1 min, route snapshots, the event
    log's aggregates), started and stopped with it.
    """

    name = "namesrv"

    def __init__(self, config, reactor=None, plugin_package=None, clock=None, events=None, takeover=False):
        from twisted.internet import reactor as default_reactor
        from namesrv.kvconfig import KVConfigManager
        from namesrv.routes import RouteInfoManager

        service.MultiService.__init__(self)
        self.config = config
        config.pin_instance_paths()
        self.reactor = reactor or default_reactor
        self.clock = clock or MonotonicClock()
        self.events = events if events is not None else _make_event_log(config, self.reactor)
        self.kv = KVConfigManager(config.kvConfigPath, reactor=self.reactor, events=self.events)
        self.kv.load()
        self.routes = RouteInfoManager(clock=self.clock, events=self.events,
                                       default_heartbeat_timeout_millis=config.brokerChannelExpiredTime)
        self.snapshots = _make_snapshotter(config, self.routes, self.reactor)
        self.context = NamesrvContext(config=config, routes=self.routes, kv=self.kv,
                                      reactor=self.reactor, events=self.events,
                                      server_id="%s:%s" % (config.bindAddress, config.listenPort))
        self.registry = ProcessorRegistry.from_plugins(self.context, plugin_package)
        self.housekeeping = BrokerHousekeeping(self.routes, self.events)
        self.readiness = Readiness()
        self.factory = RemotingServerFactory(self.registry, config, self.housekeeping, self.events, self.reactor)
        self.listen_factory = secure_service(self)
        self.answer_cache = _make_answer_cache(config, self.registry, self.routes, self.kv)
        self.factory.answer_cache = self.answer_cache
        self.read_workers = _make_read_workers(config, self)
        from namesrv.handover.coordinator import Handover
        self.handover = Handover(self, takeover=takeover)   # after the dispatcher is wired: it counts answers
        self.port = None
        self.listen_socket = None
        self._adopted_socket = False
        self.security.setServiceParent(self)
        self._scan = self._every("liveness scan", self._scan_not_active_brokers,
                                 lambda: config.scanNotActiveBrokerInterval / 1000.0, 5)
        self._every("KV print", self.kv.print_all, lambda: config.kvConfigPrintInterval, 60)
        if self.snapshots is not None:
            self._every("route snapshot", self._save_snapshot, lambda: config.routeSnapshotInterval,
                        config.routeSnapshotInterval)
        self._every("event log aggregates", self.events.flush_aggregates, lambda: 1.0, 1.0)
        config.add_listener(self._config_changed)

    # -- lifecycle -------------------------------------------------------------
    def startService(self):
        if self.snapshots is not None:
            self.snapshots.restore()
        gc.freeze()
        self.events.start()
        service.MultiService.startService(self)   # security first, then the timers
        if self.handover.takeover:
            # namesrv/handover: the tables and the listening socket come from the running process
            self.handover.take_over().addCallbacks(self._serve, self._takeover_failed)
        else:
            self._serve(None)

    def _worker_listening(self):
        from namesrv.server.sharedport import HeldPort, close_listening
        if self._adopted_socket and self.port is not None:
            close_listening(self.port)
            self.port = HeldPort(self.listen_socket)
            self._adopted_socket = False

    def _takeover_failed(self, failure):
        log.error("namesrv: takeover failed, not starting: {why}", why=failure.getErrorMessage())
        self.reactor.callLater(0, self.reactor.stop)

    def _serve(self, listening=None):
        """Listen on ``listening`` (a takeover's socket) or a new socket, start workers and timers."""
        backlog = self.config.serverSocketBacklog or 50
        if self.read_workers is not None:
            # One socket: the workers inherit it (readworkers/sharedport.py says why).
            from namesrv.server.sharedport import HeldPort, adopt_listening, listening_socket
            self.listen_socket = listening or listening_socket(self.config.listenPort, self.config.bindAddress,
                                                               backlog)
            if self.config.routeReadWorkersExclusive and listening is None:
                self.port = HeldPort(self.listen_socket)
            else:
                # Exclusive after a takeover: this process accepts only until a worker does, so
                # that no connection waits in the queue while the new workers start.
                self.port = adopt_listening(self.reactor, self.listen_socket, self.listen_factory)
                self._adopted_socket = True
                if self.config.routeReadWorkersExclusive:
                    self.read_workers.on_listening = self._worker_listening
        elif listening is not None:
            from namesrv.server.sharedport import adopt_listening
            self.listen_socket = listening
            self.port = adopt_listening(self.reactor, listening, self.listen_factory)
            self._adopted_socket = True
        else:
            self.port = self.reactor.listenTCP(self.config.listenPort, self.listen_factory, backlog=backlog,
                                               interface=self.config.bindAddress)
            self.listen_socket = getattr(self.port, "socket", None)
        address = self.port.getHost()
        if self.read_workers is not None:
            self.read_workers.start(address.port, self.listen_socket)
        self.context.server_id = "%s:%s" % (address.host, address.port)
        self.readiness.serving_address = (address.host, address.port)
        self.events.server_id = self.context.server_id
        log.info("The Name Server boot success. serializeType=JSON, address {addr}",
                 addr=self.context.server_id)
        self.events.emit("server_started", listen=self.context.server_id)
        self.handover.serving()

    def _every(self, name, function, interval, first_delay):
        """A child timer: ``function`` every ``interval()`` seconds, the first after ``first_delay``."""
        timer = PeriodicCall(name, function, interval, first_delay, self.reactor)
        timer.setServiceParent(self)
        return timer

    def stopService(self):
        self.readiness.serving_address = None
        stopping = [service.MultiService.stopService(self),   # the timers, then security
                    defer.maybeDeferred(self.handover.stop)]
        if self.port is not None:
            if self.handover.handed_over or self._adopted_socket:
                # the socket lives on in the new process (or our workers): close our descriptor only
                from namesrv.server.sharedport import close_listening
                stopping.append(defer.maybeDeferred(close_listening, self.port))
            else:
                stopping.append(defer.maybeDeferred(self.port.stopListening))
            self.port = None
        if self._adopted_socket:
            self.listen_socket.close()   # held beside the reactor's own duplicate (adopt_listening)
        self.listen_socket = None
        # Save before closing connections: closing them is not brokers leaving. After a takeover
        # the tables are the new process's, which saves them itself.
        if self.snapshots is not None and not self.handover.handed_over:
            self.snapshots.save_now()
        self.kv.flush_sync()
        for processor in self.registry.processors:
            stop = getattr(processor, "stop", None)  # optional: processors with state to flush
            if stop is not None:
                stop()
        workers_stopped = self.read_workers.stop() if self.read_workers is not None else defer.succeed(None)
        self.factory.close_all()
        # The event log closes after the workers: their last request counts arrive as they exit.
        stopping.append(workers_stopped.addCallback(self._close_event_log))
        return defer.DeferredList(stopping)

    def _close_event_log(self, ignored=None):
        self.events.emit("server_stopped", listen=self.context.server_id)
        self.events.stop()
        log.info("The Name Server stopped")

    # -- timers ------------------------------------------------------------------
    def _scan_not_active_brokers(self):
        self.housekeeping.scan_not_active_brokers()
        # Route tables are long-lived: moving them out of the collector's reach keeps full
        # collections (measured up to 0.44 s at 1M entries) off the reactor thread.
        gc.freeze()

    def _save_snapshot(self):
        """Only while serving: during a takeover the tables are not ours yet (an empty copy must
        never replace the last good snapshot)."""
        if self.readiness.serving_address is not None:
            return self.snapshots.save_in_background()

    def _config_changed(self, name, old, new):
        if name == "scanNotActiveBrokerInterval":
            self._scan.restart()


def _make_answer_cache(config, registry, routes, kv):
    """Whole answers for repeated route reads, dropped on any change to what they were built from."""
    if not config.answerCacheEnable:
        return None
    from namesrv.protocol.answercache import AnswerCache
    cache = AnswerCache(registry, max_entries=config.answerCacheMaxEntries)
    registry.answer_cache = cache
    routes.add_change_listener(cache.invalidate)
    kv.change_listeners.append(cache.invalidate)
    config.add_listener(cache.invalidate)
    return cache


def _make_read_workers(config, service):
    """Route read workers on the same port (namesrv/readworkers), when ``routeReadWorkers`` > 0.

    They terminate TLS and check ACL signatures themselves, from the same files
    (readworkers/worker/guards.py), so every tlsMode and aclEnable works with them.
    """
    count = int(config.routeReadWorkers or 0)
    if count <= 0:
        return None
    from namesrv.readworkers.worker.guards import worker_arguments
    from namesrv.readworkers.main.processes import ReadWorkerPool
    security = service.security
    return ReadWorkerPool(count, routes=service.routes, kv=service.kv, config=config, registry=service.registry,
                          factory=service.factory, holds=security.dispatcher.holds,
                          started=service.context.started, reactor=service.reactor,
                          tls_factory=security.tls_factory, metrics=security.metrics,
                          worker_arguments=worker_arguments(config))


def _make_event_log(config, reactor):
    if not config.eventLogEnable:
        return NullEventLog()
    from namesrv.observe.eventlog import EventLog
    return EventLog(config.event_log_path(), server_id="%s:%s" % (config.bindAddress, config.listenPort),
                    max_bytes=config.eventLogMaxBytes, backups=config.eventLogBackups, reactor=reactor)


def _make_snapshotter(config, routes, reactor):
    if not config.routeSnapshotEnable or not config.routeSnapshotPath:
        return None
    from namesrv.storage.snapshotfile import RouteSnapshotFile
    from namesrv.storage.instance import InstanceIdentity
    return RouteSnapshotFile(os.path.expanduser(config.routeSnapshotPath), routes, reactor,
                             owner=InstanceIdentity.for_config(config))


def make_service(config, reactor=None, plugin_package=None, clock=None, events=None, takeover=False):
    """The tap-style factory: one NameServer service for ``config`` (``takeover``: namesrv/handover)."""
    return NamesrvService(config, reactor=reactor, plugin_package=plugin_package, clock=clock, events=events,
                          takeover=takeover)
