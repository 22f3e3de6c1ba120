"""The files security reads, as services that watch them: the ACL file and the TLS material.

``AclFile``: the credentials the trust policy checks (the policies themselves are built with the
rest of the request path, namesrv/dispatch/chain.py). ``GuardListeners``: who hears of refusals
and queue waits (the metrics). ``TlsListening``: the remoting factory behind TLS sniffing, with the
certificate watcher.

Startup-only properties (read here, once): aclEnable, aclFile, tlsMode and the TLS paths,
fileWatchIntervalMillis. A configuration that cannot be honoured (no usable ACL file, bad TLS
material) raises: better not to start than to start unguarded.
"""

import os

from twisted.application import service as app_service
from twisted.logger import Logger

from namesrv.security.acl import AclStore
from namesrv.security.certs import ServerTlsMaterial
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


class AclFile(app_service.MultiService):
    """``aclEnable``: the credentials (``store``, an AclStore loaded now: a file that cannot be used refuses
    the start), reloaded by a watcher child when the file changes."""

    name = "acl"

    def __init__(self, config, reactor):
        app_service.MultiService.__init__(self)
        self.store = AclStore(resolve_acl_path(config))
        self.store.load()
        FileWatcher([self.store.path], self.store.reload, watch_interval(config), clock=reactor).setServiceParent(self)

    @classmethod
    def for_config(cls, config, reactor):
        """An AclFile, or None when ``aclEnable`` is off."""
        return cls(config, reactor) if config.aclEnable else None


class TlsListening(app_service.MultiService):
    """``factory`` behind TLS sniffing for ``tlsMode`` permissive or enforcing (``factory``
    attribute: what to listen with), reloading the certificate files when they change."""

    name = "tls"

    def __init__(self, config, factory, reactor):
        app_service.MultiService.__init__(self)
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
