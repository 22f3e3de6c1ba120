"""Prometheus metrics: requests by code, latency per class, route-table sizes, refusals, bad frames, drops.

Each server has its own ``CollectorRegistry`` (several servers can run in one test process).
Counters and histograms are updated on the reactor thread as requests finish; the state
that lives elsewhere (route tables, connections, event-log drops, in-flight counts) is
read on the reactor thread when a scrape arrives, then the text is rendered in the
reactor's thread pool by ``prometheus_client``'s WSGI app, so a scrape never holds the
reactor for longer than a few ``len()`` calls and one pass over the live brokers (not the
topics), and no thread reads the route tables.

The gauges read what the real objects have: the sizes of the RouteInfoManager's public
tables, the factory's ``connections`` and ``refused``, and the IEventLog's ``dropped``. A feature
built beside them (the read workers, the embedded controller) adds its own collector as it is
built (``add_collector``): read on the reactor thread at a scrape, turned into families later.

Names and labels are what dashboards and alert rules (conf/prometheus, conf/grafana) are
written against: add metrics freely, rename one only by keeping the old name for a release.
"""

from collections import Counter as Tally
from operator import itemgetter

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest, make_wsgi_app
from twisted.internet import defer
from twisted.logger import Logger
from twisted.web import resource, wsgi
from zope.interface import implementer

from namesrv.interfaces import IRequestObserver
from namesrv.observe.httpport import HttpPortService
from namesrv.protocol.codes import RequestCode
from namesrv.dispatch.classes import ALL_CLASSES
from namesrv.observe.health import HealthResource

log = Logger()

PREFIX = "rocketmq_namesrv_"
#: why a request was refused before its processor ran: the trust policy's steps (namesrv/security/trust.py),
#: the broker address list, the per-class limits
REJECTION_REASONS = ("acl_unsigned", "acl_bad_signature", "acl_unknown_account", "acl_disabled_account",
                     "acl_not_allowed", "acl_unclassified", "broker_allowlist", "overload")
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                   0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: (metric name, help, the RouteInfoManager table whose size it is) for the route-table gauges.
_ROUTE_GAUGES = (
    ("active_brokers", "Brokers with a live entry (brokerLiveTable).", "broker_live_table"),
    ("topics", "Topics with at least one queue (topicQueueTable).", "topic_queue_table"),
    ("clusters", "Clusters (clusterAddrTable).", "cluster_addr_table"),
)


@implementer(IRequestObserver)
class NamesrvMetrics:
    """An IRequestObserver plus the listeners the policies, the scheduler and the event log call."""

    def __init__(self, classifier, routes=None, factory=None, events=None, limits=None,
                 dispatcher=None, tls=None, acl_store=None, registry=None):
        self.classifier = classifier
        self.routes = routes
        self.factory = factory
        self.events = events
        self.limits = limits
        self.dispatcher = dispatcher
        self.tls = tls
        self.acl_store = acl_store
        self.registry = registry if registry is not None else CollectorRegistry()
        self._known_codes = {int(code): code.name for code in RequestCode}
        self.requests = Counter(PREFIX + "requests", "Requests answered, by request code and response code "
                                "(-1: oneway, no answer).", ["code", "name", "request_class", "response_code"],
                                registry=self.registry)
        self.latency = Histogram(PREFIX + "request_duration_seconds", "Time from dispatch to answer, per class.",
                                 ["request_class"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.queue_wait = Histogram(PREFIX + "queue_wait_seconds", "Time a request waited in its class's queue "
                                    "before processing.", ["request_class"], buckets=LATENCY_BUCKETS,
                                    registry=self.registry)
        self.rejected_requests = Counter(PREFIX + "rejected_requests", "Requests refused before processing, by "
                                         "class and reason (%s)." % ", ".join(REJECTION_REASONS),
                                         ["request_class", "reason"], registry=self.registry)
        self.expirations = Counter(PREFIX + "broker_expirations", "Brokers removed because their heartbeat "
                                   "was too old.", registry=self.registry)
        self.unregistrations = Counter(PREFIX + "broker_unregistrations", "Brokers removed, by reason "
                                       "(request, channel_closed, expired).", ["reason"], registry=self.registry)
        self.first_registrations = Counter(
            PREFIX + "broker_first_registrations", "Brokers that became live: a first registration (a new broker, "
            "or one back after it expired or unregistered). Several in a short time for one broker: it flaps.",
            ["cluster", "broker_name", "broker_id"], registry=self.registry)
        self.read_worker_restarts = Counter(PREFIX + "read_worker_restarts", "Route read workers that exited "
                                            "while the server was running (each is started again).",
                                            registry=self.registry)
        self._collectors = []          # features' own (add_collector)
        self.bad_frames = Counter(PREFIX + "bad_frames", "Connections closed for a frame that could not be "
                                  "decoded (or a peer that stopped reading).", registry=self.registry)
        for request_class in ALL_CLASSES:
            self.latency.labels(request_class)
            for reason in REJECTION_REASONS:
                self.rejected_requests.labels(request_class, reason)
        self._children = {}
        self._snapshot = {}
        self._clusters_seen = set()
        self.registry.register(_SnapshotCollector(self))

    # -- IRequestObserver ----------------------------------------------------------
    def record_request(self, code, response_code, micros, peer):
        key = (code, response_code)
        children = self._children.get(key)
        if children is None:
            request_class = self.classifier.classify(code)
            name = self._known_codes.get(code)
            label = str(code) if name is not None or self.classifier.known(code) else "other"
            children = (self.requests.labels(label, name or "OTHER", request_class, str(response_code)),
                        self.latency.labels(request_class))
            self._children[key] = children
        children[0].inc()
        children[1].observe(micros / 1e6)

    # -- listeners ---------------------------------------------------------------
    def rejected(self, request_class, reason):
        self.rejected_requests.labels(request_class, reason).inc()

    def queue_waited(self, request_class, seconds):
        self.queue_wait.labels(request_class).observe(seconds)

    def event(self, event, fields):
        if event == "broker_expired":
            self.expirations.inc()
        elif event == "broker_unregistered":
            self.unregistrations.labels(str(fields.get("reason", "unknown"))).inc()
        elif event == "bad_frame":
            self.bad_frames.inc()
        elif event == "broker_registered":
            cluster = str(fields.get("cluster"))
            self._clusters_seen.add(cluster)   # listed even if it is gone before the next scrape
            self.first_registrations.labels(cluster, str(fields.get("brokerName")), str(fields.get("brokerId"))).inc()

    def read_worker_exited(self):
        self.read_worker_restarts.inc()

    def add_collector(self, collector):
        """A feature's own families: ``collector.read()`` is called on the reactor thread at each
        scrape, ``collector.families(reading)`` then yields its metric families (in any thread)."""
        self._collectors.append(collector)

    @property
    def collectors(self):
        return tuple(self._collectors)

    # -- scrape ------------------------------------------------------------------
    def refresh(self):
        """Read the state that lives elsewhere; call on the reactor thread."""
        snapshot = {}
        if self.routes is not None:
            for name, _, table in _ROUTE_GAUGES:
                snapshot[name] = len(getattr(self.routes, table))
            snapshot["cluster_live_brokers"] = self._live_brokers_per_cluster()
        if self.factory is not None:
            snapshot["connections"] = len(self.factory.connections)
            snapshot["connections_refused"] = self.factory.refused
            snapshot["connections_limit"] = self.factory.connection_limit()
        if self.events is not None:
            snapshot["event_log_dropped"] = self.events.dropped
        if self.limits is not None:
            snapshot["in_flight"] = dict(self.limits.in_flight)
            snapshot["queued"] = dict(self.limits.waiting)
        if self.tls is not None:
            snapshot["tls"] = dict(self.tls.counts)
        if self.acl_store is not None:
            snapshot["acl"] = (self.acl_store.reloads, self.acl_store.reload_failures,
                               len(self.acl_store.table.accounts))
        snapshot["collected"] = [(collector, collector.read()) for collector in self._collectors]
        self._snapshot = snapshot
        return snapshot

    def _live_brokers_per_cluster(self):
        """Live brokers per cluster; a cluster seen since start stays listed at 0 once its last
        broker is gone (a vanished series would never fire "no live broker in a cluster")."""
        self._clusters_seen.update(self.routes.cluster_addr_table)
        counts = dict.fromkeys(self._clusters_seen, 0)
        counts.update(Tally(map(itemgetter(0), self.routes.broker_live_table)))   # keys: (cluster, addr)
        return counts

    def exposition(self):
        """The text a scrape returns (refreshes first): for tests and tools."""
        self.refresh()
        return generate_latest(self.registry)

    def resource(self, reactor):
        return _MetricsResource(self, reactor)


class _SnapshotCollector:
    """Families built from the last ``refresh()``."""

    def __init__(self, metrics):
        self.metrics = metrics

    def describe(self):
        return []

    def collect(self):
        snap = self.metrics._snapshot
        for name, help_text, _ in _ROUTE_GAUGES:
            if snap.get(name) is not None:
                yield GaugeMetricFamily(PREFIX + name, help_text, value=snap[name])
        if "cluster_live_brokers" in snap:
            family = GaugeMetricFamily(PREFIX + "cluster_live_brokers", "Live brokers per cluster (0: every broker "
                                       "of a cluster seen since start is gone).", labels=["cluster"])
            for cluster, count in sorted(snap["cluster_live_brokers"].items()):
                family.add_metric([cluster], count)
            yield family
        if "connections" in snap:
            yield GaugeMetricFamily(PREFIX + "connections", "Open client and broker connections.",
                                    value=snap["connections"])
            yield CounterMetricFamily(PREFIX + "connections_refused", "Connections closed at once because "
                                      "serverMaxConnections were open.", value=snap["connections_refused"])
            yield GaugeMetricFamily(PREFIX + "connections_limit", "Connections above which new ones are refused "
                                    "(serverMaxConnections, capped by the descriptor limit; 0: none).",
                                    value=snap["connections_limit"])
        if "event_log_dropped" in snap:
            yield CounterMetricFamily(PREFIX + "event_log_dropped", "Events the event log dropped "
                                      "(its queue was full).", value=snap["event_log_dropped"])
        if "in_flight" in snap:
            in_flight = GaugeMetricFamily(PREFIX + "in_flight_requests", "Requests being processed, per class.",
                                          labels=["request_class"])
            queued = GaugeMetricFamily(PREFIX + "queued_requests", "Requests waiting in their class's queue.",
                                       labels=["request_class"])
            for request_class in ALL_CLASSES:
                in_flight.add_metric([request_class], snap["in_flight"].get(request_class, 0))
                queued.add_metric([request_class], snap["queued"].get(request_class, 0))
            yield in_flight
            yield queued
        if "tls" in snap:
            family = CounterMetricFamily(PREFIX + "accepted_connections", "Connections by how they started "
                                         "(tls, plain) and those closed for the wrong kind (refused_tls, "
                                         "refused_plain).", labels=["kind"])
            for kind, value in sorted(snap["tls"].items()):
                family.add_metric([kind], value)
            yield family
        if "acl" in snap:
            reloads, failures, accounts = snap["acl"]
            family = CounterMetricFamily(PREFIX + "acl_reloads", "ACL file reloads.", labels=["result"])
            family.add_metric(["ok"], reloads)
            family.add_metric(["failed"], failures)
            yield family
            yield GaugeMetricFamily(PREFIX + "acl_accounts", "Accounts in the ACL file.", value=accounts)
        for collector, reading in snap.get("collected", ()):
            yield from collector.families(reading)


class ScrapeThreads:
    """The reactor's thread pool as a WSGIResource uses it (``callInThread``), counting the scrapes running.

    A scrape's thread writes its answer through ``blockingCallFromThread``: it waits for the reactor. The
    reactor's shutdown joins its pool's threads after the services have stopped: a scrape still running then
    (Prometheus keeps its connection alive and asks again every few seconds) waited for a reactor that waited
    for it, and the stop never ended (tools.stopstress: 17 of 20 SIGTERMs under keep-alive scrapes). So the
    metrics port's stop refuses new scrapes (``closed``) and waits until those running have ended (``close``),
    while the reactor still runs.
    """

    def __init__(self, reactor):
        self.reactor = reactor
        self.running = 0
        self.closed = False
        self._idle = []

    def callInThread(self, f, *args, **kwargs):
        self.running += 1

        def counted():
            try:
                f(*args, **kwargs)
            finally:
                self.reactor.callFromThread(self._ended)
        self.reactor.getThreadPool().callInThread(counted)

    def _ended(self):
        self.running -= 1
        if not self.running:
            idle, self._idle = self._idle, []
            for d in idle:
                d.callback(None)

    def close(self):
        """No scrape starts from now on: a Deferred that fires once those running have ended."""
        self.closed = True
        if not self.running:
            return defer.succeed(None)
        d = defer.Deferred()
        self._idle.append(d)
        return d


class _MetricsResource(resource.Resource):
    """Refreshes on the reactor thread, then lets prometheus_client render in the thread pool (``threads``);
    once the port stops, 503 (a scrape must not start a thread the reactor's shutdown would wait for)."""

    isLeaf = True

    def __init__(self, metrics, reactor):
        resource.Resource.__init__(self)
        self.metrics = metrics
        self.threads = ScrapeThreads(reactor)
        self.wsgi = wsgi.WSGIResource(reactor, self.threads, make_wsgi_app(metrics.registry))

    def render(self, request):
        if self.threads.closed:
            request.setResponseCode(503)
            request.setHeader(b"connection", b"close")
            return b"stopping\n"
        self.metrics.refresh()
        return self.wsgi.render(request)


class MetricsHttpService(HttpPortService):
    """Serves ``/metrics`` (and ``/health`` given a Readiness, and ``children``) on ``port`` at ``interface``."""

    name = "prometheus"
    what = "Prometheus metrics"
    path = "/metrics"

    def __init__(self, metrics, port, interface="127.0.0.1", reactor=None, readiness=None):
        HttpPortService.__init__(self, self._root, port, interface, reactor)
        self.metrics = metrics
        self.readiness = readiness
        self.children = {}   # more top-level resources (path segment -> resource): the address service
        self.scrapes = None  # the /metrics resource while serving

    def stopService(self):
        """Stop listening, and fire once no scrape runs in the reactor's threads any more (ScrapeThreads)."""
        stopped = defer.maybeDeferred(HttpPortService.stopService, self)
        if self.scrapes is None:
            return stopped
        return defer.gatherResults([stopped, self.scrapes.threads.close()], consumeErrors=True)

    def _root(self, reactor):
        root = resource.Resource()
        self.scrapes = self.metrics.resource(reactor)
        root.putChild(b"metrics", self.scrapes)
        if self.readiness is not None:
            root.putChild(b"health", HealthResource(self.readiness, reactor))
        for name, child in self.children.items():
            root.putChild(name, child)
        return root


def metrics_port_service(config, chain, listeners, acl, tls, routes, factory, events, reactor, readiness=None):
    """The Prometheus port (``prometheusListenPort``) for one server, fed by the request chain's refusals
    (``listeners``), every finished request (an observer of ``chain``'s registry) and every event."""
    metrics = NamesrvMetrics(chain.classifier, routes=routes, factory=factory, events=events,
                             limits=chain.limits, dispatcher=chain.priority,
                             tls=tls.factory if tls is not None else None,
                             acl_store=acl.store if acl is not None else None)
    listeners.add(metrics)
    chain.registry.observers.add(metrics)
    events.add_listener(metrics.event)
    return MetricsHttpService(metrics, config.prometheusListenPort, config.bindAddress or "127.0.0.1",
                              reactor, readiness=readiness)
