"""The guards in front of the processors, built once by ``make_service`` and passed on.

``RequestGuards``: who may ask what (ACL, the broker allow list) and how much at once (the
per-class limits and the priority dispatcher), with the ACL file's watcher as a child.
``TlsListening``: the remoting factory behind TLS sniffing, with the certificate watcher.

Startup-only properties (read here, once): aclEnable, aclFile, tlsMode and the TLS paths,
fileWatchIntervalMillis. Live properties (read per request): aclSignedClasses,
brokerAllowedAddresses, the *MaxInFlight limits, isolationSchedulerEnable (the turns'
budget is the process scheduler's: schedulerTurnBudgetMillis). A configuration that cannot be honoured (no usable ACL file, bad
TLS material) raises: better not to start than to start unguarded.
"""

import os

from twisted.application import service as app_service
from twisted.logger import Logger

from namesrv.dispatch.classes import RequestClassifier
from namesrv.dispatch.isolation import ClassLimitPolicy, PriorityDispatcher
from namesrv.security.acl import AclPolicy, AclStore, BrokerAllowListPolicy
from namesrv.security.filewatch import FileWatcher
from namesrv.server import tlsmode

log = Logger()

DEFAULT_ACL_FILE = os.path.join("conf", "plain_acl.yml")


def resolve_acl_path(config):
    """``aclFile``, relative to ``rocketmqHome`` when that is set (as Java's ``conf/plain_acl.yml``)."""
    path = os.path.expanduser(config.aclFile or DEFAULT_ACL_FILE)
    home = config.rocketmqHome or ""
    if not os.path.isabs(path) and home:
        path = os.path.join(os.path.expanduser(home), path)
    return path


def watch_interval(config):
    return max(50, config.fileWatchIntervalMillis) / 1000.0


class GuardListeners:
    """Passes the guards' refusals and queue waits on to whoever adds itself (the metrics)."""

    def __init__(self):
        self._listeners = []

    def add(self, listener):
        self._listeners.append(listener)

    def rejected(self, request_class, reason):
        for listener in self._listeners:
            listener.rejected(request_class, reason)

    def queue_waited(self, request_class, seconds):
        for listener in self._listeners:
            listener.queue_waited(request_class, seconds)


class RequestGuards(app_service.MultiService):
    """The request policies installed into ``registry`` and the dispatcher in front of it.

    ``dispatcher`` is what the remoting factory dispatches to. ``listeners`` hear about
    refusals and queue waits (``listeners.add``: the metrics); stopping drops queued work.
    """

    name = "security"

    def __init__(self, config, registry, reactor, scheduler):
        app_service.MultiService.__init__(self)
        self.listeners = GuardListeners()
        self.classifier = classifier = RequestClassifier.from_registry(registry)
        self.acl_store = None
        if config.aclEnable:
            self.acl_store = AclStore(resolve_acl_path(config))
            self.acl_store.load()
            registry.add_policy(AclPolicy(self.acl_store, classifier, config, [self.listeners]))
            FileWatcher([self.acl_store.path], self.acl_store.reload, watch_interval(config),
                        clock=reactor).setServiceParent(self)
        registry.add_policy(BrokerAllowListPolicy(classifier, config, [self.listeners]))
        self.limits = ClassLimitPolicy(classifier, config, [self.listeners])
        registry.add_policy(self.limits)
        self.dispatcher = PriorityDispatcher(registry, classifier, self.limits, config, scheduler,
                                             listeners=[self.listeners])

    def stopService(self):
        self.dispatcher.stop()
        return app_service.MultiService.stopService(self)


class TlsListening(app_service.MultiService):
    """``factory`` behind TLS sniffing for ``tlsMode`` permissive or enforcing (``factory``
    attribute: what to listen with), reloading the certificate files when they change."""

    name = "tls"

    def __init__(self, config, factory, reactor):
        app_service.MultiService.__init__(self)
        from namesrv.security.certs import ServerTlsMaterial
        mode = tlsmode.parse_mode(config.tlsMode)
        self.material = ServerTlsMaterial(
            cert_path=config.tlsServerCertPath, key_path=config.tlsServerKeyPath,
            key_password_path=config.tlsServerKeyPasswordFile,
            trust_path=config.tlsServerTrustCertPath,
            client_auth=config.tlsServerNeedClientAuth,
            test_mode=config.tlsTestModeEnable)
        self.material.load()
        self.factory = tlsmode.TlsSniffingFactory(factory, mode, self.material, config=config, reactor=reactor)
        if self.material.watched_paths:
            FileWatcher(self.material.watched_paths, self.material.reload, watch_interval(config),
                        clock=reactor).setServiceParent(self)
        log.info("TLS {mode} on the remoting port", mode=mode)

    @classmethod
    def for_config(cls, config, factory, reactor):
        """A TlsListening, or None when ``tlsMode`` is disabled (listen with ``factory`` itself)."""
        if tlsmode.parse_mode(config.tlsMode) == tlsmode.DISABLED:
            return None
        return cls(config, factory, reactor)
