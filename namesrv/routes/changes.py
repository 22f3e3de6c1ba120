"""Who is told when the route tables change, and when.

Kept apart from the tables so that it survives a reset of them (a snapshot restore, a
replica's full copy) and can be tested alone. The tables report each change here
(``topic_set_changed``, ``queue_datas_changed``, ...); this object drops what the route-body
cache built from it and tells the followers. Two kinds of followers:

- listeners, ``callback()`` after any change a read could see (the answer cache, the read
  workers' publisher): called once per operation, when it ends, however many tables it
  touched;
- topic trackers (a set with a ``full`` flag, e.g. readworkers.main.publisher.TopicTracker): every
  topic whose QueueData or static-topic mapping changes is added (and, to a tracker with a
  ``brokers`` set, every broker name whose BrokerData or cluster membership changes); a reset
  of all tables sets ``full`` instead.

An operation (``operation()``) also collects the topics whose broker-name set it changes
(the tables' moves, ``moved``), and reports them as ``topic_route_changed`` events when it ends.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Iterator, Mapping, Optional, Protocol, TypeVar

from namesrv.observe.eventlog import NullEventLog
from namesrv.routes import bulk
from namesrv.routes.bodycache import RouteBodyCache

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IEventLog
    from namesrv.routes.queuemaps import QueueMap
    from namesrv.routes.tables import RouteTables


class TopicTracker(Protocol):
    """A follower that collects changed topics: a set with a ``full`` flag (it may also have a ``brokers`` set
    and a ``moved`` method, looked up when used)."""

    full: bool

    def update(self, *topics: Iterable[str]) -> None: ...


Tracker = TypeVar("Tracker", bound=TopicTracker)
#: an operation's moves so far: (topics, brokers before, brokers after, batch)
RecordedMove = tuple[list[str], tuple[str, ...], tuple[str, ...], int]


class RouteChanges:
    """The change notifications of one RouteInfoManager."""

    def __init__(self, body_cache: Optional[RouteBodyCache] = None, events: Optional[IEventLog] = None) -> None:
        self.body_cache = body_cache if body_cache is not None else RouteBodyCache()
        self.events: IEventLog = events if events is not None else NullEventLog()
        self.listeners: list[Callable[[], object]] = []
        self.trackers: list[TopicTracker] = []
        #: bumped at every notification (cheap "did anything change since" checks, e.g. the status page)
        self.generation = 0
        #: bumped when a topic appears or disappears, or the tables are replaced (the status page's sorted names)
        self.topic_set_generation = 0
        #: inside an operation: the tables' moves so far, [(topics, map before, map after, batch)]; else None
        self.moves: Optional[list[RecordedMove]] = None
        self._depth = 0        # > 0 inside an operation: notify once, when it ends
        self._pending = False

    # -- followers ---------------------------------------------------------------------
    def add_listener(self, callback: Callable[[], object]) -> None:
        self.listeners.append(callback)

    def track(self, tracker: Tracker) -> Tracker:
        self.trackers.append(tracker)
        return tracker

    def untrack(self, tracker: TopicTracker) -> None:
        """Stop feeding ``tracker`` (this one: trackers are sets, and two with the same topics are equal)."""
        self.trackers = [t for t in self.trackers if t is not tracker]

    # -- what the tables report ------------------------------------------------------------
    def topic_set_changed(self) -> None:
        """A topic appeared or disappeared."""
        self.topic_set_generation += 1
        self.body_cache.topic_set_changed()
        self.changed()

    def queue_datas_changed(self, topics: Collection[str]) -> None:
        """The QueueData or static-topic mapping of ``topics`` changed."""
        self.body_cache.forget_routes(topics)
        for tracker in self.trackers:
            tracker.update(topics)
        self.changed()

    def brokers_changed(self, broker_name: Optional[str] = None) -> None:
        """The BrokerData or cluster membership of ``broker_name`` (None: of any broker) changed. A tracker
        with a ``brokers`` set (the read workers' publisher) collects the names; None marks it ``full``."""
        self.body_cache.brokers_changed(broker_name)
        for tracker in self.trackers:
            brokers = getattr(tracker, "brokers", None)
            if brokers is not None:
                if broker_name is None:
                    tracker.full = True
                else:
                    brokers.add(broker_name)
        self.changed()

    def broker_routes_changed(self, topics: Collection[str]) -> None:
        """Something the routes of ``topics`` show about one of their brokers changed (its BrokerData, the
        filter servers of one of its addresses)."""
        self.changed()
        self.body_cache.forget_routes(topics)

    def broker_topic_sets_changed(self, topic_sets: Iterable[Collection[str]]) -> None:
        """``broker_routes_changed`` for one broker whose topics are in several sets (its maps': no union)."""
        self.changed()
        for topics in topic_sets:
            self.body_cache.forget_routes(topics)

    def routes_of_brokers_changed(self, topic_sets: list[set[str]]) -> None:
        """``broker_routes_changed`` for several brokers at once (``topic_sets``: each one's topics)."""
        self.changed()
        self.body_cache.forget_routes_of(topic_sets)

    def everything_changed(self) -> None:
        """The tables were replaced: every cached body goes, every tracker is marked full."""
        self.topic_set_generation += 1
        self.body_cache.clear()
        for tracker in self.trackers:
            tracker.full = True
        self.changed()

    # -- operations ----------------------------------------------------------------------
    def begin(self) -> None:
        self._depth += 1

    def end(self) -> None:
        """Leave an operation; the outermost one notifies if anything changed inside it."""
        self._depth -= 1
        if self._depth == 0 and self._pending:
            self._pending = False
            self.changed()

    def changed(self) -> None:
        if self._depth:
            self._pending = True
            return
        self.generation += 1
        for callback in self.listeners:
            callback()

    @property
    def in_operation(self) -> bool:
        return self.moves is not None

    @contextmanager
    def operation(self, tables: RouteTables) -> Iterator[None]:
        """One operation on ``tables``: collects the topics whose broker-name set it changes and reports them.

        Topics that went from the same brokers to the same brokers share one
        ``topic_route_changed`` event (``topics``: the sorted list; a lone topic keeps the ``topic``
        field): a broker's first registration of 10,000 topics is one event, not 10,000.
        """
        outer = self.moves is not None
        if not outer:
            self.moves = []
        self.begin()
        try:
            yield
        finally:
            if not outer:
                moves, self.moves = self.moves, None
                self.end()
                self._report(moves, tables.topic_queue_table)
            else:
                self.end()

    def moved(self, topics: Collection[str], before: Optional[QueueMap], after: Optional[QueueMap],
              batch: int) -> None:
        """The tables are giving ``topics`` the map ``after`` (None: they go), from ``before`` (None: they were
        not there); ``batch`` numbers the tables' batches of moves (each topic once in a batch). Told before
        the move (``topics`` may be a set the move hands on). A tracker with a ``moved`` method hears it too."""
        if self.moves is not None and self.route_events_wanted():   # names now: a map may change in place
            self.moves.append((list(topics), tuple(before) if before else (), tuple(after) if after else (), batch))
        for tracker in self.trackers:
            heard = getattr(tracker, "moved", None)
            if heard is not None:
                heard(topics, after, batch)

    def route_events_wanted(self) -> bool:
        """An event log that drops topic_route_changed (``NullEventLog``) spares us grouping them."""
        return not getattr(self.events, "drops_route_changes", False)

    def _report(self, moves: Optional[list[RecordedMove]], table: Mapping[str, QueueMap]) -> None:
        if not moves:
            return
        if len({batch for _, _, _, batch in moves}) == 1:
            groups = bulk.moved_changes([(topics, before, after) for topics, before, after, _ in moves])
        else:   # several batches may have moved a topic twice: its first map against its map now
            touched: dict[str, Collection[str]] = {}
            for topics, before, _, _ in reversed(moves):
                touched.update(dict.fromkeys(topics, before))
            groups = bulk.route_changes(touched, table)
        emit = self.events.emit
        for (before, after), topics in groups.items():
            if len(topics) == 1:
                emit("topic_route_changed", topic=topics[0], before=list(before), after=list(after))
            else:
                emit("topic_route_changed", topics=sorted(topics), before=list(before), after=list(after))
