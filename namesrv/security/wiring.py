"""Installs authorization, isolation, TLS and metrics into one NameServer; the service calls it once.

Usage, from ``NamesrvService.__init__`` once ``self.registry`` and ``self.factory`` exist::

    self.listen_factory = secure_service(self)      # listenTCP(..., self.listen_factory, ...)

and in ``startService`` (before listening) / ``stopService``::

    self.security.startService()
    stopping.append(defer.maybeDeferred(self.security.stopService))

``self.security`` is a MultiService holding the file watchers (ACL file, TLS files) and the
Prometheus HTTP port; stopping it also drops the scheduler's queued work.

Startup-only properties (read here, once): aclEnable, aclFile, tlsMode and the TLS paths,
prometheusListenPort, fileWatchIntervalMillis. Live properties (read per request):
aclSignedClasses, brokerAllowedAddresses, the *MaxInFlight limits, isolationSchedulerEnable,
isolationTurnBudgetMillis.
"""

import os

from twisted.application import service as app_service
from twisted.logger import Logger

from namesrv.server import tlsmode
from namesrv.dispatch.isolation import ClassLimitPolicy, PriorityDispatcher
from namesrv.security.acl import AclPolicy, AclStore, BrokerAllowListPolicy
from namesrv.dispatch.classes import RequestClassifier
from namesrv.security.filewatch import FileWatcher

log = Logger()

DEFAULT_ACL_FILE = os.path.join("conf", "plain_acl.yml")


class SecurityServices(app_service.MultiService):
    """The children secure_service made, plus the objects tests and metrics look at."""

    name = "security"

    def __init__(self):
        app_service.MultiService.__init__(self)
        self.classifier = None
        self.acl_store = None
        self.limits = None
        self.dispatcher = None
        self.tls_material = None
        self.tls_factory = None
        self.metrics = None

    def stopService(self):
        if self.dispatcher is not None:
            self.dispatcher.stop()
        return app_service.MultiService.stopService(self)


def resolve_acl_path(config):
    """``aclFile``, relative to ``rocketmqHome`` when that is set (as Java's ``conf/plain_acl.yml``)."""
    path = os.path.expanduser(config.aclFile or DEFAULT_ACL_FILE)
    home = config.rocketmqHome or ""
    if not os.path.isabs(path) and home:
        path = os.path.join(os.path.expanduser(home), path)
    return path


def secure_service(service):
    """Install policies/observers into ``service.registry``; return the factory to listen with.

    Raises ``ValueError`` subclasses (AclFileError, TlsConfigError, or a bad property value)
    when the configuration cannot be honoured: better not to start than to start unguarded.
    """
    config = service.config
    reactor = service.reactor
    interval = max(50, config.fileWatchIntervalMillis) / 1000.0
    security = SecurityServices()
    security.classifier = classifier = RequestClassifier.from_registry(service.registry)
    listeners = []

    metrics_port = config.prometheusListenPort
    if metrics_port:
        from namesrv.observe.metrics import NamesrvMetrics
        security.metrics = NamesrvMetrics(classifier, routes=service.routes,
                                          factory=service.factory, events=service.events)
        listeners.append(security.metrics)

    if config.aclEnable:
        security.acl_store = AclStore(resolve_acl_path(config))
        security.acl_store.load()
        service.registry.add_policy(AclPolicy(security.acl_store, classifier, config, listeners))
        FileWatcher([security.acl_store.path], security.acl_store.reload, interval,
                    clock=reactor).setServiceParent(security)
    service.registry.add_policy(BrokerAllowListPolicy(classifier, config, listeners))

    security.limits = ClassLimitPolicy(classifier, config, listeners)
    service.registry.add_policy(security.limits)
    security.dispatcher = PriorityDispatcher(service.registry, classifier, security.limits, config, reactor,
                                             listeners=listeners)
    service.factory.dispatcher = security.dispatcher

    listen_factory = service.factory
    mode = tlsmode.parse_mode(config.tlsMode)
    if mode != tlsmode.DISABLED:
        from namesrv.security.certs import ServerTlsMaterial
        material = security.tls_material = ServerTlsMaterial(
            cert_path=config.tlsServerCertPath, key_path=config.tlsServerKeyPath,
            key_password_path=config.tlsServerKeyPasswordFile,
            trust_path=config.tlsServerTrustCertPath,
            client_auth=config.tlsServerNeedClientAuth,
            test_mode=config.tlsTestModeEnable)
        material.load()
        listen_factory = security.tls_factory = tlsmode.TlsSniffingFactory(
            service.factory, mode, material, config=config, reactor=reactor)
        if material.watched_paths:
            FileWatcher(material.watched_paths, material.reload, interval, clock=reactor).setServiceParent(security)
        log.info("TLS {mode} on the remoting port", mode=mode)

    if security.metrics is not None:
        from namesrv.observe.metrics import MetricsHttpService
        metrics = security.metrics
        metrics.limits = security.limits
        metrics.dispatcher = security.dispatcher
        metrics.tls = security.tls_factory
        metrics.acl_store = security.acl_store
        service.registry.add_observer(metrics)
        watch_events(service.events, metrics.event)
        MetricsHttpService(metrics, metrics_port, config.bindAddress or "127.0.0.1",
                           reactor, readiness=service.readiness).setServiceParent(security)

    _attach_status_page(service, security)
    service.security = security
    return listen_factory


def _attach_status_page(service, security):
    """The read-only status page (namesrv/status) as a child of ``security``, when ``statusListenPort`` is set."""
    port = service.config.statusListenPort
    if port:
        from namesrv.status.web import attach_status_page
        attach_status_page(service, security, port, watch_events)


def watch_events(events, callback):
    """Call ``callback(event, fields)`` for every event ``events`` (an IEventLog) emits."""
    events.add_listener(callback)
    return True
