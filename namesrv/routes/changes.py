"""Who is told when the route tables change, and when.

Kept apart from the tables so that it survives a reset of them (a snapshot restore, a
replica's full copy) and can be tested alone. The tables report each change here
(``topic_set_changed``, ``queue_datas_changed``, ...); this object drops what the route-body
cache built from it and tells the followers. Two kinds of followers:

- listeners, ``callback()`` after any change a read could see (the answer cache, the read
  workers' publisher): called once per operation, when it ends, however many tables it
  touched;
- topic trackers (a set with a ``full`` flag, e.g. readworkers.main.publisher.TopicTracker): every
  topic whose QueueData or static-topic mapping changes is added; a reset of all tables
  sets ``full`` instead.

An operation (``operation()``) also collects the topics whose broker-name set it changes,
and reports them as ``topic_route_changed`` events when it ends.
"""

from contextlib import contextmanager
from itertools import filterfalse

from namesrv.observe.eventlog import NullEventLog
from namesrv.routes import bulk
from namesrv.routes.bodycache import RouteBodyCache


class RouteChanges:
    """The change notifications of one RouteInfoManager."""

    def __init__(self, body_cache=None, events=None):
        self.body_cache = body_cache if body_cache is not None else RouteBodyCache()
        self.events = events if events is not None else NullEventLog()
        self.listeners = []
        self.trackers = []
        #: bumped at every notification (cheap "did anything change since" checks, e.g. the status page)
        self.generation = 0
        #: bumped when a topic appears or disappears, or the tables are replaced (the status page's sorted names)
        self.topic_set_generation = 0
        #: inside an operation: topic -> its broker names before the operation; else None
        self.touched = None
        self._created_alone = None   # set by a bulk first registration, read when its operation ends
        self._depth = 0        # > 0 inside an operation: notify once, when it ends
        self._pending = False

    # -- followers ---------------------------------------------------------------------
    def add_listener(self, callback):
        self.listeners.append(callback)

    def track(self, tracker):
        self.trackers.append(tracker)
        return tracker

    def untrack(self, tracker):
        if tracker in self.trackers:
            self.trackers.remove(tracker)

    # -- what the tables report ------------------------------------------------------------
    def topic_set_changed(self):
        """A topic appeared or disappeared."""
        self.topic_set_generation += 1
        self.body_cache.topic_set_changed()
        self.changed()

    def queue_datas_changed(self, topics):
        """The QueueData or static-topic mapping of ``topics`` changed."""
        self.body_cache.forget_routes(topics)
        for tracker in self.trackers:
            tracker.update(topics)
        self.changed()

    def brokers_changed(self, broker_name=None):
        """The BrokerData or cluster membership of ``broker_name`` (None: of any broker) changed."""
        self.body_cache.brokers_changed(broker_name)
        self.changed()

    def broker_routes_changed(self, topics):
        """Something the routes of ``topics`` show about one of their brokers changed (its BrokerData, the
        filter servers of one of its addresses)."""
        self.changed()
        self.body_cache.forget_routes(topics)

    def routes_of_brokers_changed(self, topic_sets):
        """``broker_routes_changed`` for several brokers at once (``topic_sets``: each one's topics)."""
        self.changed()
        self.body_cache.forget_routes_of(topic_sets)

    def everything_changed(self):
        """The tables were replaced: every cached body goes, every tracker is marked full."""
        self.topic_set_generation += 1
        self.body_cache.clear()
        for tracker in self.trackers:
            tracker.full = True
        self.changed()

    # -- operations ----------------------------------------------------------------------
    def begin(self):
        self._depth += 1

    def end(self):
        """Leave an operation; the outermost one notifies if anything changed inside it."""
        self._depth -= 1
        if self._depth == 0 and self._pending:
            self._pending = False
            self.changed()

    def changed(self):
        if self._depth:
            self._pending = True
            return
        self.generation += 1
        for callback in self.listeners:
            callback()

    @contextmanager
    def operation(self, tables):
        """One operation on ``tables``: collects the topics whose broker-name set it changes and reports them.

        Topics that went from the same brokers to the same brokers share one
        ``topic_route_changed`` event (``topics``: the list; a lone topic keeps the ``topic``
        field): a broker's first registration of 10,000 topics is one event, not 10,000.
        """
        outer = self.touched is not None
        if not outer:
            self.touched = {}
        self.begin()
        try:
            yield
        finally:
            if not outer:
                touched, self.touched = self.touched, None
                self.end()
                self._report(touched, tables.topic_queue_table)
            else:
                self.end()

    def touch(self, topic, qmap):
        """``topic`` (whose QueueData are ``qmap``, or None) is about to change its broker set."""
        if topic not in self.touched:
            self.touched[topic] = tuple(qmap) if qmap else ()

    def touch_many(self, topics, table):
        """``touch`` for each of ``topics``, whose QueueData are in ``table``. Those touched already are
        skipped in a pass in C; given a set (a broker's topics), with the hashes the set keeps: a mass
        disconnect checks each topic ten times, and reading a million strings for their hashes was
        most of its cost."""
        touched = self.touched
        fresh = topics.difference(touched) if isinstance(topics, set) else filterfalse(touched.__contains__, topics)
        for topic in fresh:
            qmap = table.get(topic)
            touched[topic] = tuple(qmap) if qmap else ()

    def created_alone(self, broker_name, topics, created):
        """The operation's first change created ``topics``, each with one QueueData of ``broker_name``
        (``created``, the new per-topic maps): its end can name the change without a scan."""
        self.touched = dict.fromkeys(topics, ())
        self._created_alone = (broker_name, topics, created)

    def _report(self, touched, table):
        created, self._created_alone = self._created_alone, None
        groups = None if created is None else bulk.created_alone_change(created, touched, table)
        if groups is None:
            groups = bulk.uniform_change(touched, table)
        if groups is None:
            groups = bulk.route_changes(touched, table)
        emit = self.events.emit
        for (before, after), topics in groups.items():
            if len(topics) == 1:
                emit("topic_route_changed", topic=topics[0], before=list(before), after=list(after))
            else:
                emit("topic_route_changed", topics=topics, before=list(before), after=list(after))
