"""PROXY headers, TLS and ACL in a read worker: the flags the main process passes, and what the worker builds.

A worker reads PROXY headers as the main process does (server/proxyprotocol.py), from the same
``proxyProtocolTrustedAddresses``, in front of its TLS sniffing: the client's address from the
header is its connections' ``peer``, which travels with a forwarded request (``PEER``) and a
handed-over socket (``HANDOFF``), so the main process checks and logs that address too.

A worker terminates TLS itself, with the main process's ``TlsSniffingFactory`` rules
(first byte 0x16 starts TLS; permissive serves both kinds, enforcing closes plain
clients) and its own ``ServerTlsMaterial`` loaded from the same files and reloaded by its
own ``FileWatcher``. It checks ACL signatures itself for the reads it answers, with an
``AclStore`` on the same ``aclFile`` (reloaded the same way) and the same ``TrustPolicy``
(namesrv/dispatch/chain.py builds it), so a refusal is the very answer the main process would give. What it forwards is checked
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

from namesrv.security.acl import AclStore
from namesrv.security.aclfile import AclFileError
from namesrv.security.certs import ServerTlsMaterial
from namesrv.security.filewatch import FileWatcher
from namesrv.security.wiring import resolve_acl_path
from namesrv.server import proxyprotocol, tlsmode

log = Logger()


def _absolute(path):
    return os.path.abspath(os.path.expanduser(path)) if path else ""


def worker_arguments(config):
    """The worker command-line flags for ``config``'s PROXY, TLS and ACL settings (none when all are off)."""
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
        args += ["--acl-file", _absolute(resolve_acl_path(config))]
    if args:
        args += ["--file-watch-interval", str(config.fileWatchIntervalMillis)]
    if config.proxyProtocolEnable:
        args += ["--proxy-protocol-trusted", config.proxyProtocolTrustedAddresses]
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
    parser.add_argument("--proxy-protocol-trusted", default=None)


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


class WorkerAcl(app_service.MultiService):
    """The worker's ACL store on the main process's ``aclFile``, reloaded by its own watcher. A file that
    cannot be read now (the main process read it at its start, and keeps those credentials) makes the
    replica ``unreadable``: every request goes to the main process until the file reads again."""

    def __init__(self, path, reactor, interval):
        app_service.MultiService.__init__(self)
        self.store = AclStore(path)
        self.unreadable = False
        try:
            self.store.load()
        except AclFileError as e:
            log.error("ACL: {error}; forwarding every request to the main process until it reads", error=str(e))
            self.unreadable = True
        FileWatcher([path], self._reload, interval, clock=reactor).setServiceParent(self)

    @classmethod
    def for_options(cls, options, reactor):
        """A WorkerAcl when the main process passed ``--acl-file``, else None."""
        if not options.acl_file:
            return None
        return cls(options.acl_file, reactor, max(50, options.file_watch_interval) / 1000.0)

    def _reload(self, changed):
        if self.store.reload(changed):
            self.unreadable = False


class WorkerGuards(app_service.MultiService):
    """The worker's trusted proxies, TLS material (and its ACL file, ``acl``), their file watchers (children),
    and the counts (connections by kind, PROXY headers; ``rejections``, the ACL refusals) the main process
    adds to its metrics."""

    def __init__(self, options, reactor, rejections, acl=None):
        app_service.MultiService.__init__(self)
        self.mode = tlsmode.parse_mode(options.tls_mode)
        self.reactor = reactor
        self.interval = max(50, options.file_watch_interval) / 1000.0
        self.material = None
        self.acl = acl
        self.rejections = rejections
        self.tls_factory = None
        self.proxy_factory = None
        self.trusted_proxies = None
        self._reported = {}
        self._proxy_reported = {}
        if options.proxy_protocol_trusted is not None:
            self.trusted_proxies = proxyprotocol.trusted_proxies(options.proxy_protocol_trusted)
        if self.mode != tlsmode.DISABLED:
            self._load_tls(options)
        if acl is not None:
            acl.setServiceParent(self)

    @property
    def acl_store(self):
        return self.acl.store if self.acl is not None else None

    def _load_tls(self, options):
        """Raises TlsConfigError when the files cannot be used: the worker then exits, and the pool
        starts another a second later, which tries again (the main process keeps serving the
        pair it loaded; when it listens too, it takes the clients meanwhile)."""
        self.material = ServerTlsMaterial(cert_path=options.tls_cert, key_path=options.tls_key,
                                          key_password_path=options.tls_key_password_file,
                                          trust_path=options.tls_trust, client_auth=options.tls_client_auth,
                                          test_mode=options.tls_test_mode)
        self.material.load()
        if self.material.watched_paths:
            FileWatcher(self.material.watched_paths, self.material.reload, self.interval,
                        clock=self.reactor).setServiceParent(self)

    def listen_factory(self, wrapped, config):
        """What the worker listens with: ``wrapped`` itself, or wrapped in first-byte TLS sniffing (with the
        replica's ``config``, one object updated in place by the publications), behind PROXY header reading
        when the main process reads them."""
        listening = wrapped
        if self.mode != tlsmode.DISABLED:
            listening = self.tls_factory = tlsmode.TlsSniffingFactory(wrapped, self.mode, self.material,
                                                                       config=config, reactor=self.reactor)
        if self.trusted_proxies is not None:
            listening = self.proxy_factory = proxyprotocol.ProxyHeaderFactory(listening, wrapped,
                                                                              self.trusted_proxies, self.reactor)
        return listening

    def take_connection_counts(self):
        """Connections by kind (tls, plain, refused_tls, refused_plain, silent) since the last call."""
        if self.tls_factory is None:
            return {}
        delta, self._reported = _since(self.tls_factory.counts, self._reported)
        return delta

    def take_proxy_counts(self):
        """PROXY header outcomes by kind (proxyprotocol.KINDS) since the last call."""
        if self.proxy_factory is None:
            return {}
        delta, self._proxy_reported = _since(self.proxy_factory.counts, self._proxy_reported)
        return delta


def _since(counts, reported):
    """(what grew in ``counts`` since ``reported``, a copy of ``counts`` to report from next time)."""
    delta = {kind: n - reported.get(kind, 0) for kind, n in counts.items() if n != reported.get(kind, 0)}
    return delta, dict(counts)
