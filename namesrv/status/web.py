"""The HTTP side of the status page: one read-only ``twisted.web`` resource and its port.

``GET /`` is the whole page; ``GET /fragment/<section>`` one section (the page's script
refreshes brokers, events and the summary every 2 s: short polling, so proxies and old
browsers need nothing special); ``GET /static/status.js`` that script (served, not inline,
so the Content-Security-Policy can forbid inline scripts). Any other method answers 405.
"""

from urllib.parse import parse_qs

from twisted.internet import defer
from twisted.logger import Logger
from twisted.web import resource, server

from namesrv.observe.httpport import HttpPortService
from namesrv.status import html, views
from namesrv.status.auth import PageAccess
from namesrv.status.recent import RecentEvents
from namesrv.status.versions import RegistrationVersions
from namesrv.status import controller

log = Logger()

_HEADERS = {
    b"content-security-policy": b"default-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    b"x-content-type-options": b"nosniff",
    b"cache-control": b"no-store",
    b"referrer-policy": b"no-referrer",
}
_PARAMS = ("bq", "bp", "t", "tp", "ns", "kq", "kp", "cq", "cp")


def _params(request):
    raw = parse_qs(request.uri.partition(b"?")[2].decode("utf-8", "replace"), keep_blank_values=False)
    return {name: raw[name][0][:200] for name in _PARAMS if name in raw}


def _int(params, name):
    try:
        return max(1, int(params.get(name, 1)))
    except ValueError:
        return 1


class StatusPage:
    """Everything a page needs from one running server, and how to turn it into sections.

    Two clocks (IReactorTime), one per meaning: ``wall`` for the times a person reads (now, when an
    event happened: the recent events are stamped with it), ``monotonic`` for intervals (how often
    the topic names are sorted; the route tables' ages use their own, ``routes.clock``). Searches
    of a big table run as jobs of ``scheduler`` (the process's TurnScheduler).
    """

    def __init__(self, routes, kv, config, registry, recent, versions, server_id, wall, monotonic, scheduler,
                 controller=None):
        self.routes, self.kv, self.config, self.registry = routes, kv, config, registry
        self.controller = controller   # the embedded Controller (enableControllerInNamesrv), or None
        self.recent, self.versions = recent, versions
        self.server_id = server_id
        self.wall = wall
        self.scheduler = scheduler
        self.sorted_topics = views.SortedTopics(routes, monotonic, scheduler=scheduler)

    def summary(self, params):
        return html.summary(self.routes, self.server_id(), self.wall.seconds())

    def brokers(self, params):
        found = views.broker_rows(self.routes, self.versions, self.recent, params.get("bq", ""),
                                  _int(params, "bp"), now_wall=self.wall.seconds())
        return html.brokers(*found, params)

    def events(self, params):
        return html.events(self.recent.latest())

    def kv_section(self, params):
        namespace = params.get("ns")
        entries = None
        if namespace is not None and namespace in self.kv.table:
            entries = views.kv_entries(self.kv, namespace, params.get("kq", ""), _int(params, "kp"))
        return html.kv(params, views.kv_namespaces(self.kv), entries)

    def config_section(self, params):
        return html.config(views.config_rows(self.config))

    def controller_section(self, params):
        if self.controller is None:
            return '<p class="muted">No controller runs here (enableControllerInNamesrv=false).</p>'
        return controller.section(self.controller.status(), params, _int(params, "cp"))

    @defer.inlineCallbacks
    def topics(self, params, peer):
        query = params.get("t", "").strip()
        names = self.sorted_topics.names()
        search = query
        if query and len(names) > views.SLICED_SEARCH_FROM:
            names = yield views.matching_names(names, query, self.scheduler)
            search = ""                                   # already filtered
        names, total, page, pages = views.page_of(names, search, _int(params, "tp"), already_sorted=True)
        answer = None
        if query:
            answer = yield defer.maybeDeferred(views.topic_route, self.registry, query, peer)
        return html.topics(params, names, total, page, pages, answer)

    @defer.inlineCallbacks
    def whole(self, params, peer):
        parts = {"summary": self.summary(params), "brokers": self.brokers(params), "events": self.events(params),
                 "kv": self.kv_section(params), "config": self.config_section(params)}
        if self.controller is not None:
            parts["controller"] = self.controller_section(params)
        parts["topics"] = yield self.topics(params, peer)
        return html.page(parts)

    FRAGMENTS = frozenset(["summary", "brokers", "events", "kv", "config", "topics", "controller"])

    def fragment(self, name, params, peer):
        """One section (a name in FRAGMENTS): its HTML, or a Deferred of it."""
        if name == "topics":
            return self.topics(params, peer)
        sections = {"summary": self.summary, "brokers": self.brokers, "events": self.events,
                    "kv": self.kv_section, "config": self.config_section, "controller": self.controller_section}
        return sections[name](params)


class StatusResource(resource.Resource):
    isLeaf = True

    def __init__(self, page, access):
        resource.Resource.__init__(self)
        self.page = page
        self.access = access

    def render_GET(self, request):
        for name, value in _HEADERS.items():
            request.setHeader(name, value)
        client = request.getClientAddress()
        host = getattr(client, "host", "")
        problem = self.access.problem(host, request.getHeader(b"authorization"))
        if problem is not None:
            request.setResponseCode(401)
            request.setHeader(b"www-authenticate", b'Basic realm="RocketMQ NameServer status", charset="UTF-8"')
            request.setHeader(b"content-type", b"text/plain; charset=utf-8")
            return (problem + "\n").encode("utf-8")
        path = request.path
        params = _params(request)
        peer = "http:%s:%s" % (host, getattr(client, "port", 0))
        if path == b"/static/status.js":
            request.setHeader(b"content-type", b"application/javascript; charset=utf-8")
            return html.SCRIPT.encode("utf-8")
        fragment = path[len(b"/fragment/"):].decode("ascii", "replace") if path.startswith(b"/fragment/") else None
        if path == b"/":
            produce = lambda: self.page.whole(params, peer)   # noqa: E731
        elif fragment in StatusPage.FRAGMENTS:
            produce = lambda: self.page.fragment(fragment, params, peer)   # noqa: E731
        else:
            request.setResponseCode(404)
            request.setHeader(b"content-type", b"text/plain; charset=utf-8")
            return b"not found\n"
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        gone = []
        request.notifyFinish().addErrback(gone.append)   # the browser left before the answer was ready
        d = defer.maybeDeferred(produce)
        d.addCallback(lambda text: text.encode("utf-8"))
        d.addErrback(self._failed, request)
        d.addCallback(self._send, request, gone)
        return server.NOT_DONE_YET

    @staticmethod
    def _failed(failure, request):
        log.failure("status page failed", failure)
        request.setResponseCode(500)
        request.setHeader(b"content-type", b"text/plain; charset=utf-8")
        return b"status page failed; see the server log\n"

    @staticmethod
    def _send(data, request, gone):
        if not gone:
            request.write(data)
            request.finish()


class StatusHttpService(HttpPortService):
    """The page's own port (``statusListenPort``); ``port`` holds the listening port."""

    name = "status-page"
    what = "Status page"

    def __init__(self, resource_, port, interface, reactor):
        HttpPortService.__init__(self, lambda reactor: resource_, port, interface, reactor)
        self.resource = resource_


def status_page_service(config, routes, kv, registry, events, context, acl_store, reactor, controller=None):
    """The page's port as a service, fed by ``events`` (recent events) and by an answer observer of the
    registry (``RegistrationVersions``: which release each broker registered with), both joined here. The reactor is the wall
    clock; the route tables' clock the monotonic one."""
    recent = RecentEvents(wall=reactor)
    events.add_listener(recent.event)
    versions = RegistrationVersions()
    registry.answer_observers.add(versions)
    page = StatusPage(routes, kv, config, registry, recent, versions, server_id=lambda: context.server_id,
                      wall=reactor, monotonic=routes.clock, scheduler=context.scheduler, controller=controller)
    access = PageAccess(config, acl_store)
    return StatusHttpService(StatusResource(page, access), config.statusListenPort,
                             config.bindAddress or "127.0.0.1", reactor)
