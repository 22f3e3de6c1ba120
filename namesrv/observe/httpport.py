"""One small HTTP port as a child service: the metrics port and the status page both use it."""

from twisted.application import service
from twisted.logger import Logger
from twisted.web import http, server

log = Logger()

#: an idle keep-alive connection is closed after this long (twisted.web keeps one 12 hours)
IDLE_TIMEOUT = 60


class BoundedChannel(http.HTTPChannel):
    """HTTP/1.1 (these ports have no TLS, so no HTTP/2 to negotiate). A request line or header
    longer than ``MAX_LENGTH`` (16 KiB) gets a 400 saying so before the close, where
    twisted.web closes without a word."""

    def lineLengthExceeded(self, line):
        self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
                             b"connection: close\r\n\r\nrequest line or header longer than %d bytes\n"
                             % self.MAX_LENGTH)
        self.loseConnection()


class QuietSite(server.Site):
    """No access log: a Prometheus scrape or a page poll every few seconds is not news."""

    noisy = False
    protocol = BoundedChannel

    def __init__(self, resource, **kwargs):
        kwargs.setdefault("timeout", IDLE_TIMEOUT)
        server.Site.__init__(self, resource, **kwargs)

    def log(self, request):
        pass


class HttpPortService(service.Service):
    """Serves ``make_root(reactor)`` on ``port`` (0 picks a free one: tests) at ``interface``;
    ``port`` is the listening port while running."""

    what = "HTTP"
    path = "/"

    def __init__(self, make_root, port, interface="127.0.0.1", reactor=None):
        self.make_root = make_root
        self.port_number = port
        self.interface = interface
        self.reactor = reactor
        self.port = None

    def startService(self):
        service.Service.startService(self)
        reactor = self.reactor
        if reactor is None:
            from twisted.internet import reactor   # the global one, only when none was given
        self.port = reactor.listenTCP(self.port_number, QuietSite(self.make_root(reactor)), interface=self.interface)
        log.info("{what} on http://{host}:{port}{path}", what=self.what, host=self.interface,
                 port=self.port.getHost().port, path=self.path)

    def stopService(self):
        service.Service.stopService(self)
        port, self.port = self.port, None
        if port is not None:
            return port.stopListening()
