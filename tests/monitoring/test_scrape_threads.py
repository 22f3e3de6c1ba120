"""A scrape running in the reactor's thread pool when the metrics port stops: the stop waits for it while the
reactor still runs, and refuses new ones, so the reactor's shutdown never joins a thread waiting for it."""

from twisted.internet import task
from twisted.web.test.requesthelper import DummyRequest

from namesrv.observe.metrics import MetricsHttpService, NamesrvMetrics
from namesrv.dispatch.classes import RequestClassifier


class HeldPool:
    """A thread pool whose calls wait until ``run_all`` (the threads that would run them are busy)."""

    def __init__(self):
        self.calls = []

    def callInThread(self, f, *args, **kwargs):
        self.calls.append((f, args, kwargs))

    def run_all(self):
        calls, self.calls = self.calls, []
        for f, args, kwargs in calls:
            f(*args, **kwargs)


class Reactor(task.Clock):
    def __init__(self):
        task.Clock.__init__(self)
        self.pool = HeldPool()

    def getThreadPool(self):
        return self.pool

    def callFromThread(self, f, *args, **kwargs):
        f(*args, **kwargs)

    def listenTCP(self, port, factory, interface):
        from twisted.internet.testing import MemoryReactor
        return MemoryReactor().listenTCP(port, factory, interface=interface)


def test_the_stop_waits_for_a_running_scrape_and_refuses_new_ones():
    reactor = Reactor()
    service = MetricsHttpService(NamesrvMetrics(RequestClassifier()), 0, reactor=reactor)
    service.startService()
    scrapes = service.scrapes
    scrapes.threads.callInThread(lambda: None)           # as WSGIResource runs a scrape
    assert scrapes.threads.running == 1
    stopped = service.stopService()
    assert not stopped.called                              # the scrape's thread still needs the reactor
    refused = DummyRequest([b"metrics"])
    assert scrapes.render(refused) == b"stopping\n" and refused.responseCode == 503
    reactor.pool.run_all()
    assert stopped.called and scrapes.threads.running == 0


def test_a_stop_with_no_scrape_running_is_at_once():
    reactor = Reactor()
    service = MetricsHttpService(NamesrvMetrics(RequestClassifier()), 0, reactor=reactor)
    service.startService()
    assert service.stopService().called
