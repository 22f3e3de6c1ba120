"""One small HTTP port as a child service: the metrics port and the status page both use it."""

from twisted.application import service
from twisted.logger import Logger
from twisted.web import server

log = Logger()


class QuietSite(server.Site):
    """No access log: a Prometheus scrape or a page poll every few seconds is not news."""

    noisy = False

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
            from twisted.internet import reactor
        self.port = reactor.listenTCP(self.port_number, QuietSite(self.make_root(reactor)), interface=self.interface)
        log.info("{what} on http://{host}:{port}{path}", what=self.what, host=self.interface,
                 port=self.port.getHost().port, path=self.path)

    def stopService(self):
        service.Service.stopService(self)
        port, self.port = self.port, None
        if port is not None:
            return port.stopListening()
