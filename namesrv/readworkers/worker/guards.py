"""TLS and ACL in a read worker: the flags the main process passes, and what the worker builds from them.

A worker terminates TLS itself, with the main process's ``TlsSniffingFactory`` rules
(first byte 0x16 starts TLS; permissive serves both kinds, enforcing closes plain
clients) and its own ``ServerTlsMaterial`` loaded from the same files and reloaded by its
own ``FileWatcher``. It checks ACL signatures itself for the reads it answers, with an
``AclStore`` on the same ``aclFile`` (reloaded the same way) and the same ``AclPolicy``,
so a refusal is the very answer the main process would give. What it forwards is checked
by the main process (the frame travels unchanged): one place decides for everything
that changes or reads the main tables, and a worker's possibly older ``aclSignedClasses``
never refuses what the main process would accept.

The startup-only properties travel on the command line (paths made absolute: a worker
runs in the pool's private directory); the live ones (``aclSignedClasses``, limits,
timeouts) are read from the replica's copy of the configuration, which is current
whenever the worker answers (a stale replica forwards).
"""

import os

from twisted.application import service as app_service
from twisted.logger import Logger

from namesrv.server import tlsmode

log = Logger()


def _absolute(path):
    return os.path.abspath(os.path.expanduser(path)) if path else ""


def worker_arguments(config):
    """The worker command-line flags for ``config``'s TLS and ACL settings (none when both are off)."""
    args = []
    mode = tlsmode.parse_mode(config.tlsMode)
    if mode != tlsmode.DISABLED:
        args += ["--tls-mode", mode,
                 "--tls-cert", _absolute(config.tlsServerCertPath),
                 "--tls-key", _absolute(config.tlsServerKeyPath),
                 "--tls-key-password-file", _absolute(config.tlsServerKeyPasswordFile),
                 "--tls-trust", _absolute(config.tlsServerTrustCertPath),
                 "--tls-client-auth", config.tlsServerNeedClientAuth or "none"]
        if config.tlsTestModeEnable:
            args.append("--tls-test-mode")
    if config.aclEnable:
        from namesrv.security.wiring import resolve_acl_path
        args += ["--acl-file", _absolute(resolve_acl_path(config))]
    if args:
        args += ["--file-watch-interval", str(config.fileWatchIntervalMillis)]
    return args


def add_arguments(parser):
    """The worker's side of ``worker_arguments``."""
    parser.add_argument("--tls-mode", default=tlsmode.DISABLED)
    parser.add_argument("--tls-cert", default="")
    parser.add_argument("--tls-key", default="")
    parser.add_argument("--tls-key-password-file", default="")
    parser.add_argument("--tls-trust", default="")
    parser.add_argument("--tls-client-auth", default="none")
    parser.add_argument("--tls-test-mode", action="store_true")
    parser.add_argument("--acl-file", default="")
    parser.add_argument("--file-watch-interval", type=int, default=500)


class ReplicaConfig:
    """The replica's current configuration, whichever object holds it now (a publication that
    changes a property replaces the replica's config object)."""

    def __init__(self, replica):
        self._replica = replica

    def __getattr__(self, name):
        return getattr(self._replica.config, name)


class RejectionCounts:
    """A policy listener summing refusals per (class, reason) until ``take()``, for the main's metrics."""

    def __init__(self):
        self._counts = {}

    def rejected(self, request_class, reason):
        key = (request_class, reason)
        self._counts[key] = self._counts.get(key, 0) + 1

    def take(self):
        counts, self._counts = self._counts, {}
        return counts


class WorkerGuards(app_service.MultiService):
    """The worker's TLS material and ACL store, their file watchers (children), and the counts
    (connections by kind, ACL refusals) the main process adds to its metrics."""

    def __init__(self, options, replica, reactor):
        app_service.MultiService.__init__(self)
        self.mode = tlsmode.parse_mode(options.tls_mode)
        self.replica = replica
        self.reactor = reactor
        self.interval = max(50, options.file_watch_interval) / 1000.0
        self.material = None
        self.acl_store = None
        self.rejections = RejectionCounts()
        self.tls_factory = None
        self._reported = {}
        if self.mode != tlsmode.DISABLED:
            self._load_tls(options)
        if options.acl_file:
            self._load_acl(options.acl_file)

    def _load_tls(self, options):
        """Raises TlsConfigError when the files cannot be used: the worker then exits, and the pool
        starts another a second later, which tries again (the main process keeps serving the
        pair it loaded; when it listens too, it takes the clients meanwhile)."""
        from namesrv.security.certs import ServerTlsMaterial
        from namesrv.security.filewatch import FileWatcher
        self.material = ServerTlsMaterial(cert_path=options.tls_cert, key_path=options.tls_key,
                                          key_password_path=options.tls_key_password_file,
                                          trust_path=options.tls_trust, client_auth=options.tls_client_auth,
                                          test_mode=options.tls_test_mode)
        self.material.load()
        if self.material.watched_paths:
            FileWatcher(self.material.watched_paths, self.material.reload, self.interval,
                        clock=self.reactor).setServiceParent(self)

    def _load_acl(self, path):
        """The same store and check as the main process's. A file that cannot be read now (the main
        process read it at its start, and keeps those credentials) holds the replica: every request
        goes to the main process until the file reads again."""
        from namesrv.security.acl import AclPolicy, AclStore
        from namesrv.security.aclfile import AclFileError
        from namesrv.dispatch.classes import RequestClassifier
        from namesrv.security.filewatch import FileWatcher
        self.acl_store = AclStore(path)
        replica = self.replica
        try:
            self.acl_store.load()
        except AclFileError as e:
            log.error("ACL: {error}; forwarding every request to the main process until it reads", error=str(e))
            replica.held = True
        classifier = RequestClassifier.from_registry(replica.registry)
        replica.registry.add_policy(AclPolicy(self.acl_store, classifier, ReplicaConfig(replica), [self.rejections]))
        FileWatcher([path], self._reload_acl, self.interval, clock=self.reactor).setServiceParent(self)

    def _reload_acl(self, changed):
        if self.acl_store.reload(changed):
            self.replica.held = False

    def listen_factory(self, wrapped):
        """What the worker listens with: ``wrapped`` itself, or wrapped in first-byte TLS sniffing."""
        if self.mode == tlsmode.DISABLED:
            return wrapped
        self.tls_factory = tlsmode.TlsSniffingFactory(wrapped, self.mode, self.material,
                                                      config=ReplicaConfig(self.replica), reactor=self.reactor)
        return self.tls_factory

    def take_connection_counts(self):
        """Connections by kind (tls, plain, refused_tls, refused_plain, silent) since the last call."""
        if self.tls_factory is None:
            return {}
        counts, reported = self.tls_factory.counts, self._reported
        delta = {kind: n - reported.get(kind, 0) for kind, n in counts.items() if n != reported.get(kind, 0)}
        self._reported = dict(counts)
        return delta
