"""``GET /rocketmq/{subgroup}``: the served name server list as Java's ``TopAddressing`` reads it.

``TopAddressing.fetchNSAddr`` takes the body of a 200 answer, trims it and keeps its first line,
and ignores anything else (a non-200 answer or an error leaves the client's list as it was). A
client with a ``unitName`` asks for ``{subgroup}-{unitName}?nofix=1``: the query is ignored, and
the subgroup must be listed like any other (``addressServiceSubgroups``).

Everything else gets a short plain-text answer saying what was wrong, never a traceback: an
unknown subgroup 404, a segment that cannot be a subgroup 400, a long URI 414 (twisted.web
itself answers 400 past 16 KiB and closes), a method other than GET or HEAD 405, and past
``addressServiceMaxRequestsPerSecond`` 429 with ``Retry-After`` (a client that gets it keeps its
list and asks again at its next fetch). Each answer is a few bytes built once per change of
the list, so a flood costs twisted.web's parsing and little more; the rate limit bounds even
that on the main process's reactor, which also answers the route reads that are not given to
read workers.
"""

from twisted.web import resource

from namesrv.addressing.namesrvlist import SUBGROUP

#: longest request target answered (a Java client's is under 100 bytes)
MAX_URI = 512

_TEXT = b"text/plain; charset=utf-8"


class RequestRate:
    """A token bucket: ``rate`` requests a second on average, bursts up to one second's worth."""

    def __init__(self, rate, clock):
        self.rate = float(rate)
        self.clock = clock
        self.tokens = self.rate
        self.stamp = clock.seconds()

    def take(self):
        if self.rate <= 0:
            return True
        now = self.clock.seconds()
        self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class AddressResource(resource.Resource):
    """The ``/rocketmq`` child of the HTTP port's root; ``book`` is the AddressLiveness (``.text``),
    ``subgroups`` a callable giving the listed subgroups, ``answered(code)`` counts each answer."""

    isLeaf = True

    def __init__(self, book, subgroups, rate, answered=lambda code: None):
        resource.Resource.__init__(self)
        self.book = book
        self.subgroups = subgroups
        self.rate = rate
        self.answered = answered

    def render(self, request):
        code, text, headers = self._answer(request)
        self.answered(code)
        request.setResponseCode(code)
        request.setHeader(b"content-type", _TEXT)
        request.setHeader(b"cache-control", b"no-store")   # a proxy must not keep a dead server listed
        for name, value in headers:
            request.setHeader(name, value)
        return text.encode() + b"\n"

    def _answer(self, request):
        if request.method not in (b"GET", b"HEAD"):
            return 405, "method %s not allowed: the address service answers GET" % _shown(request.method), \
                [(b"allow", b"GET, HEAD")]
        if len(request.uri) > MAX_URI:
            return 414, "request target longer than %d bytes: ask for /rocketmq/{subgroup}" % MAX_URI, []
        if not self.rate.take():
            return 429, "too many requests: the address service answers %d a second; ask again later" % (
                self.rate.rate), [(b"retry-after", b"1")]
        if len(request.postpath) != 1 or not request.postpath[0]:
            return 404, "ask for /rocketmq/{subgroup}: %s" % self._listed(), []
        segment = request.postpath[0]
        try:
            subgroup = segment.decode("ascii")
        except UnicodeDecodeError:
            subgroup = None
        if subgroup is None or not SUBGROUP.match(subgroup):
            return 400, "%s is not a subgroup (letters, digits, '.', '_', '-'; at most 128)" % _shown(segment), []
        if subgroup not in self.subgroups():
            return 404, "unknown subgroup %s: %s" % (subgroup, self._listed()), []
        return 200, self.book.text, []

    def _listed(self):
        return "this name server answers " + ", ".join("/rocketmq/" + name for name in self.subgroups())


class AddressServiceOff(resource.Resource):
    """``/rocketmq/...`` while ``addressServiceNamesrvAddr`` is empty: 404 saying how to turn it on."""

    isLeaf = True

    def render(self, request):
        request.setResponseCode(404)
        request.setHeader(b"content-type", _TEXT)
        return (b"the address service is off: set addressServiceNamesrvAddr (host:port;host:port) "
                b"to serve the name server list here\n")


def _shown(raw, limit=64):
    """``raw`` (bytes) as a short printable quote, for an answer that names it."""
    text = raw[:limit].decode("ascii", "backslashreplace")
    text = "".join(c if c.isprintable() else "\\x%02x" % ord(c) for c in text)
    return "'%s'" % (text + ("..." if len(raw) > limit else ""))
