"""What each part of the page shows, as plain rows: computed per request, one page at a time.

Nothing here renders HTML; ``html.py`` does. Costs with 1,000 brokers and 100,000 topics
(bench/scenarios/status_page.py): one pass over the live table for the broker page, one substring
pass over topic names plus a bounded heap for a topic page, the route processor's own
cached answer for a topic.
"""

import heapq
import re

from namesrv.codec import fastjson
from namesrv.config import java_text
from namesrv.timing.scheduler import BULK
from namesrv.protocol.codes import RequestCode, ResponseCode, Version
from namesrv.protocol.command import make_request

PAGE_SIZE = 50
#: A member is "near expiry" when less than this share of its heartbeat timeout is left.
NEAR_EXPIRY_SHARE = 0.25
#: Expired members stay listed (greyed) this long after the scan removed them.
EXPIRED_SHOWN_SECONDS = 600

_VERSION_NAMES = {value: name for name, value in vars(Version).items() if name.startswith("V")}


def version_name(ordinal):
    if ordinal is None:
        return ""
    return _VERSION_NAMES.get(ordinal, str(ordinal))


def page_of(names, query, page, per_page=PAGE_SIZE, already_sorted=False):
    """(the ``page``-th sorted slice of the names containing ``query``, how many match, page, pages).

    A substring pass, then a heap of ``page * per_page`` items (or a slice when ``names`` is
    already sorted): never a sort of everything for the first pages of a big table.
    """
    query = (query or "").strip()
    matches = [name for name in names if query in name] if query else names
    pages = max(1, -(-len(matches) // per_page))
    page = min(max(1, page), pages)
    if already_sorted:
        shown = list(matches[(page - 1) * per_page: page * per_page])
    else:
        shown = heapq.nsmallest(page * per_page, matches)[(page - 1) * per_page:]
    return shown, len(matches), page, pages


#: above this many names a search runs a slice per reactor turn (one pass over a million names would hold the
#: reactor far longer than a turn; figures: bench/results/design-figures.md#status-topics)
SLICED_SEARCH_FROM = 100000
SEARCH_SLICE = 20000


def matching_names(names, query, scheduler):
    """A Deferred of the names (in their order) containing ``query``: a job of the process's scheduler
    (``BULK``, after everything else of a turn), ``SEARCH_SLICE`` names per step, so that
    registrations and heartbeats go on between them."""
    matches = []

    def scan():
        for start in range(0, len(names), SEARCH_SLICE):
            matches.extend(name for name in names[start:start + SEARCH_SLICE] if query in name)
            yield None

    return scheduler.cooperate(scan(), BULK, "status-page search").whenDone().addCallback(lambda _: matches)


_DIGITS = re.compile(r"[0-9]+")


def _padded(match):
    return match.group().rjust(20, "0")


def natural_key(name):
    """``name`` with every run of digits padded to 20 places: plain string order on these keys is the order a
    reader expects (Topic2 before Topic10, Topic10 before Topic100), and strings compare in C, as fast as the
    names themselves."""
    return _DIGITS.sub(_padded, name)


#: at most this many new names get their sort keys in the asking turn; more are a job of the scheduler
KEYS_INLINE = 20000


class SortedTopics:
    """The topic names in natural order (Topic0, Topic1, Topic2, ..., Topic10, Topic100), sorted once per change of
    the set of topics and at most every ``min_interval`` s.

    A registration that only repeats its topics changes nothing here: at a million topics a sort is a long
    stretch of the main process, and re-sorting at every route change made each view cost that.

    Between two sorts a new topic may be missing from the list for up to ``min_interval``
    seconds (its route is still found: an exact search asks the route processor). This keeps
    a registration storm from making every page view sort 100,000 names.

    A name's sort key (``natural_key``) is kept from one sort to the next, so only new topics' keys are
    computed; more than ``KEYS_INLINE`` of them (the first view after a start with many topics) are computed
    ``SEARCH_SLICE`` per turn as a job of ``scheduler``, the list in plain order shown meanwhile.
    """

    def __init__(self, routes, monotonic, min_interval=2.0, scheduler=None):
        self.routes = routes
        self.monotonic = monotonic
        self.min_interval = min_interval
        self.scheduler = scheduler
        self._names = []
        self._key = None
        self._sorted_at = None
        self._sort_keys = {}      # name -> natural_key(name)
        self._computing = None    # the job computing new names' keys, while it runs

    def names(self):
        table = self.routes.topic_queue_table
        key = (id(table), self.routes.topic_set_generation, len(table))
        now = self.monotonic.seconds()
        if key != self._key and self._computing is None and (
                self._sorted_at is None or not 0 <= now - self._sorted_at < self.min_interval):
            self._key = key
            self._sorted_at = now
            self._sort(list(table))
        return self._names

    def _sort(self, names):
        missing = list(set(names) - self._sort_keys.keys())
        if len(missing) <= KEYS_INLINE or self.scheduler is None:
            self._sort_keys.update(zip(missing, map(natural_key, missing)))
            self._in_order(names)
            return
        if not self._names:
            self._names = sorted(names)   # something to show while the keys are computed

        def compute():
            for start in range(0, len(missing), SEARCH_SLICE):
                chunk = missing[start:start + SEARCH_SLICE]
                self._sort_keys.update(zip(chunk, map(natural_key, chunk)))
                yield None

        def done(result):
            self._computing = None
            return result

        self._computing = self.scheduler.cooperate(compute(), BULK, "status-page topic order").whenDone()
        self._computing.addCallback(lambda _: self._in_order(names))
        self._computing.addBoth(done)

    def _in_order(self, names):
        if len(self._sort_keys) > 2 * len(names):   # many topics gone since: forget their keys
            self._sort_keys = {name: self._sort_keys[name] for name in names}
        self._names = sorted(names, key=self._sort_keys.__getitem__)


class BrokerRow:
    __slots__ = ("cluster", "broker_name", "broker_id", "addr", "ha_addr", "version", "data_version",
                 "topics", "age", "timeout", "state", "why", "when")

    def __init__(self, **values):
        for name in self.__slots__:
            setattr(self, name, values.get(name))


def broker_rows(routes, versions, recent, query="", page=1, per_page=PAGE_SIZE, now_wall=None):
    """(rows of one page, matching members, page, pages): clusters -> groups -> members.

    ``state`` is ``alive``, ``near-expiry`` (less than a quarter of its timeout left),
    ``expired`` (past its timeout, waiting for the next scan) or ``removed`` within the last
    10 minutes (from the recent events), with ``why`` (``expired``: the scan removed it;
    ``connection closed``: a broker killed, crashed or cut off) and ``when`` (wall time).
    """
    now = routes.clock.seconds()   # monotonic, as the members' last_update
    query = (query or "").strip().lower()
    members = []
    for (cluster, addr), live in routes.broker_live_table.items():
        key = (cluster or "", live.broker_name or "", live.broker_id if live.broker_id is not None else -1, addr)
        if not query or any(query in str(part).lower() for part in key):
            members.append((key, live))
    gone = []
    if now_wall is not None:
        for (cluster, addr), (when, fields, why) in list(recent.gone.items()):
            if now_wall - when <= EXPIRED_SHOWN_SECONDS and (cluster, addr) not in routes.broker_live_table:
                key = (cluster or "", fields.get("brokerName") or "", fields.get("brokerId", -1), addr)
                if not query or any(query in str(part).lower() for part in key):
                    gone.append((key, when, (fields, why)))
    total = len(members) + len(gone)
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    everything = [(key, live, None) for key, live in members] + [(key, None, (when, f)) for key, when, f in gone]
    everything.sort(key=lambda item: item[0])
    rows = []
    for (cluster, name, broker_id, addr), live, removed in everything[(page - 1) * per_page: page * per_page]:
        if live is not None:
            age = max(0.0, now - live.last_update)
            timeout = live.heartbeat_timeout_millis / 1000.0
            state = "expired" if age > timeout else "near-expiry" if timeout - age < timeout * NEAR_EXPIRY_SHARE \
                else "alive"
            dv = live.data_version
            rows.append(BrokerRow(cluster=cluster, broker_name=name, broker_id=broker_id, addr=addr,
                                  ha_addr=live.ha_server_addr, version=version_name(versions.get(cluster, addr)),
                                  data_version="%s @ %s" % (dv.counter, dv.timestamp) if dv is not None else "",
                                  topics=routes.broker_topic_count(name), age=age, timeout=timeout, state=state))
        else:
            when, (fields, why) = removed
            age = (fields["ageMs"] / 1000.0 + (now_wall - when)) if fields.get("ageMs") is not None else None
            rows.append(BrokerRow(cluster=cluster, broker_name=name, broker_id=broker_id, addr=addr, ha_addr="",
                                  version=version_name(versions.get(cluster, addr)), data_version="", topics=None,
                                  age=age, timeout=None, state="removed", why=why, when=when))
    return rows, total, page, pages


class PageConnection:
    """Stands for the browser where a processor expects a remoting connection."""

    connection_id = 0
    closing = False

    def __init__(self, peer):
        self.peer = peer

    def close(self):
        pass


def topic_route(registry, topic, peer="status-page"):
    """GET_ROUTEINFO_BY_TOPIC's answer for ``topic``, from the route processor itself.

    Asked as a 4.9.8 client asks (standard JSON). Returns the response command, or a
    Deferred of it when the processor answers later.
    """
    processor = registry.processor_for(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=Version.V4_9_8)
    return processor.process_request(request, PageConnection(peer))


def decode_route(answer):
    """The answer's TopicRouteData as a dict, or None when it is not SUCCESS."""
    if answer is None or answer.code != ResponseCode.SUCCESS or not answer.body:
        return None
    return fastjson.loads(answer.body)


def kv_namespaces(kv):
    return sorted((namespace, len(entries)) for namespace, entries in kv.table.items())


def kv_entries(kv, namespace, query="", page=1):
    entries = kv.table.get(namespace) or {}
    keys, total, page, pages = page_of(entries, query, page)
    return [(key, entries[key]) for key in keys], total, page, pages


def config_rows(config):
    """(name, value text, blacklisted?) for every property and extra key."""
    black = config.black_list()
    return [(name, java_text(config.get(name)), name in black) for name in config.names()]
