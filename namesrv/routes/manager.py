"""RouteInfoManager: the route tables behind one face, as the processors and the service use them.

Pure Python: no sockets, no reactor. Time comes from ``clock.seconds()`` (production: a
monotonic clock; tests: ``task.Clock``). The reactor is single-threaded, so each call runs
to completion, which gives the atomicity Java gets from its read-write lock.

The work is done by objects that can be built and tested alone; this class builds them
and passes each call on:

- ``tables`` (tables.py): the five route tables, the indexes beside them and the changes
  every algorithm is made of;
- ``changes`` (changes.py): operations, topic_route_changed events, listeners and topic
  trackers; it empties ``body_cache`` (bodycache.py) as the tables change;
- ``registrations`` (registration.py): REGISTER/UNREGISTER_BROKER, connection close, expiry;
- ``queries`` (queries.py): every read, answered from ``body_cache`` where it can be;
- ``admin`` (admin.py): liveness refreshes and admin operations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Concatenate, Optional, ParamSpec, Protocol, TypeVar, Union

from namesrv.timing.clock import MonotonicClock
from namesrv.routes.admin import RouteAdmin
from namesrv.routes.bodycache import DEFAULT_MAX_BYTES as DEFAULT_BODY_CACHE_MAX_BYTES, RouteBodyCache
from namesrv.routes.changes import RouteChanges, TopicTracker, Tracker
from namesrv.routes.invariants import check_invariants
from namesrv.routes.model import (
    DEFAULT_HEARTBEAT_TIMEOUT_MILLIS, BrokerData, BrokerLiveInfo, DataVersion, LiveKey, MappingInfo, MinBrokerIdChange,
    QueueData, RemovedBroker, TopicRouteData)
from namesrv.routes.queries import RouteQueries
from namesrv.routes.registration import BrokerRegistrations
from namesrv.routes.shortcut import UnchangedRegistrations
from namesrv.routes.tables import RouteTables
from namesrv.routes.topiclists import Steps

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IEventLog, IRemotingConnection
    from namesrv.routes.queuemaps import QueueMap
    from namesrv.timing.clock import Clock

P = ParamSpec("P")
R = TypeVar("R")


class Restoring(Protocol):
    """A snapshot being restored while the process serves (storage/restoring.py)."""

    def finish_now(self) -> object: ...


def _component(name: str) -> property:
    """The facade's read-write view of one attribute of a component: ``"tables.topic_queue_table"`` (read workers'
    replicas replace whole tables), ``"registrations.default_heartbeat_timeout_millis"``."""
    component, attribute = name.split(".")

    def get(self: RouteInfoManager) -> object:
        return getattr(getattr(self, component), attribute)

    def set_(self: RouteInfoManager, value: object) -> None:
        setattr(getattr(self, component), attribute, value)
    return property(get, set_, doc="``%s``" % name)


def _changing(component: str, method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[RouteInfoManager, P], R]:
    """The facade's ``method`` of ``component`` (an attribute naming a RouteTables, BrokerRegistrations or
    RouteAdmin) for a change of the tables: a restore still running ends first (``_restored``), then the
    component's own method runs with the same arguments, signature and docstring."""
    name = method.__name__

    def change(self: RouteInfoManager, *args: P.args, **kwargs: P.kwargs) -> R:
        self._restored()
        return getattr(getattr(self, component), name)(*args, **kwargs)
    change.__name__, change.__qualname__ = name, "RouteInfoManager." + name
    change.__doc__ = method.__doc__
    return change


class RouteInfoManager:
    """The route tables (behaviour.md §1) and the algorithms that change them.

    Tables (public for reading, never mutate them from outside): ``topic_queue_table`` topic
    -> {brokerName: QueueData}; ``broker_addr_table`` brokerName -> BrokerData;
    ``cluster_addr_table`` cluster -> set(brokerName); ``broker_live_table`` (cluster,
    brokerAddr) -> BrokerLiveInfo; ``filter_server_table`` (cluster, brokerAddr) -> [addr];
    ``topic_queue_mapping_info_table`` topic -> {brokerName: mapping info dict}.
    """

    if TYPE_CHECKING:   # the types of the properties below
        topic_queue_table: dict[str, QueueMap]
        broker_addr_table: dict[str, BrokerData]
        cluster_addr_table: dict[str, set[str]]
        broker_live_table: dict[LiveKey, BrokerLiveInfo]
        filter_server_table: dict[LiveKey, list[str]]
        topic_queue_mapping_info_table: dict[str, dict[str, MappingInfo]]
        #: where ``topic_route_changed`` events go (the change tracker's event log)
        events: IEventLog
        #: a registration's heartbeat timeout when its header names none
        default_heartbeat_timeout_millis: int
    else:
        topic_queue_table = _component("tables.topic_queue_table")
        broker_addr_table = _component("tables.broker_addr_table")
        cluster_addr_table = _component("tables.cluster_addr_table")
        broker_live_table = _component("tables.broker_live_table")
        filter_server_table = _component("tables.filter_server_table")
        topic_queue_mapping_info_table = _component("tables.topic_queue_mapping_info_table")
        events = _component("changes.events")
        default_heartbeat_timeout_millis = _component("registrations.default_heartbeat_timeout_millis")

    def __init__(self, clock: Optional[Clock] = None, events: Optional[IEventLog] = None,
                 default_heartbeat_timeout_millis: int = DEFAULT_HEARTBEAT_TIMEOUT_MILLIS,
                 body_cache_max_bytes: int = DEFAULT_BODY_CACHE_MAX_BYTES, share_queue_maps: bool = False,
                 master_hint: Optional[Callable[[str], Optional[str]]] = None) -> None:
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        # survives resets: listeners stay subscribed
        self.changes = RouteChanges(body_cache=RouteBodyCache(body_cache_max_bytes), events=events)
        # a replica, whose topics' maps are only ever replaced whole, shares them (queuemaps.py)
        self.tables = RouteTables(self.changes, share_queue_maps)
        self.registrations = BrokerRegistrations(self.tables, self.changes, self.clock,
                                                 default_heartbeat_timeout_millis, master_hint=master_hint)
        self.queries = RouteQueries(self.tables, self.changes.body_cache)
        self.unchanged = UnchangedRegistrations(self)
        self.admin = RouteAdmin(self.tables, self.changes, self.clock)
        # The hot paths (a route read, a heartbeat, the unchanged-registration shortcut) are the
        # components' own methods, same names and signatures: no extra call on the way.
        self.route_body = self.queries.route_body
        self.joined_bodies = self.queries.joined_bodies
        self.broker_heartbeat = self.admin.broker_heartbeat
        self.query_data_version = self.admin.query_data_version
        self.refresh_unchanged_registration = self.registrations.refresh_unchanged_registration
        self.registration_token = self.tables.registration_token
        #: a snapshot being restored while the process serves (storage/restoring.py), or None: a change
        #: of the tables finishes it first (``_restored``)
        self.restoring: Optional[Restoring] = None

    def _restored(self) -> None:
        """Before any change of the tables: a restore still running ends now (its chunks would overwrite it)."""
        if self.restoring is not None:
            self.restoring.finish_now()

    def finish_restore(self) -> None:
        """Whole tables from now on (a snapshot still being restored is restored at once)."""
        self._restored()

    @property
    def body_cache(self) -> RouteBodyCache:
        return self.changes.body_cache

    # -- followers ---------------------------------------------------------------------
    def add_change_listener(self, callback: Callable[[], object]) -> None:
        """``callback()`` after any change a read could see (e.g. AnswerCache.invalidate); kept across resets."""
        self.changes.add_listener(callback)

    def add_min_broker_id_listener(self, callback: Callable[[MinBrokerIdChange], object]) -> None:
        """``callback(MinBrokerIdChange)`` whenever a group's lowest id changes as 5.x tells its brokers (905)."""
        self.registrations.min_broker_id_listeners.append(callback)

    def track_topic_changes(self, tracker: Tracker) -> Tracker:
        """Add to ``tracker`` (a set with a ``full`` flag) every topic whose QueueData or static-topic
        mapping changes from now on; a reset of all tables sets ``tracker.full`` instead."""
        return self.changes.track(tracker)

    def untrack_topic_changes(self, tracker: TopicTracker) -> None:
        self.changes.untrack(tracker)

    @property
    def change_generation(self) -> int:
        return self.changes.generation

    @property
    def topic_set_generation(self) -> int:
        """Changes only when a topic appears or disappears (or the tables are replaced)."""
        return self.changes.topic_set_generation

    def reset_caches(self) -> None:
        """Drop every cached answer body: the tables were replaced (a snapshot restore, a
        replica's new broker tables). Every follower hears that everything changed."""
        self.changes.everything_changed()

    # -- registrations ------------------------------------------------------------------
    register_broker = _changing("registrations", BrokerRegistrations.register_broker)
    unregister_broker = _changing("registrations", BrokerRegistrations.unregister_broker)

    def on_connection_closed(self, connection: IRemotingConnection) -> list[RemovedBroker]:
        return self.on_connections_closed([connection])

    def on_connections_closed(self, connections: list[IRemotingConnection]) -> list[RemovedBroker]:
        if self.restoring is not None and any(connection in self.tables.by_connection for connection in connections):
            self._restored()
        return self.registrations.on_connections_closed(connections)

    scan_not_active_brokers = _changing("registrations", BrokerRegistrations.scan_not_active_brokers)
    route_committed_master = _changing("registrations", BrokerRegistrations.route_committed_master)

    # -- liveness refreshes and admin operations -------------------------------------------
    def is_broker_topic_config_changed(self, cluster: str, broker_addr: str, data_version: DataVersion) -> bool:
        return self.admin.is_broker_topic_config_changed(cluster, broker_addr, data_version)

    def query_broker_data_version(self, cluster: str, broker_addr: str) -> Optional[DataVersion]:
        return self.admin.query_broker_data_version(cluster, broker_addr)

    wipe_write_perm_of_broker = _changing("admin", RouteAdmin.wipe_write_perm_of_broker)
    add_write_perm_of_broker = _changing("admin", RouteAdmin.add_write_perm_of_broker)
    delete_topic = _changing("admin", RouteAdmin.delete_topic)
    register_topic = _changing("admin", RouteAdmin.register_topic)

    # -- queries --------------------------------------------------------------------------
    def pickup_topic_route(self, topic: str, support_acting_master: bool = False) -> Optional[TopicRouteData]:
        return self.queries.pickup_topic_route(topic, support_acting_master)

    def broker_topic_count(self, broker_name: str) -> int:
        return self.queries.broker_topic_count(broker_name)

    def topic_broker_names(self, topic: str) -> list[str]:
        return self.queries.topic_broker_names(topic)

    def cluster_info_body(self) -> bytes:
        return self.queries.cluster_info_body()

    def get_all_cluster_info(self) -> tuple[dict[str, BrokerData], dict[str, set[str]]]:
        return self.queries.get_all_cluster_info()

    def broker_member_group(self, cluster: str, broker_name: str) -> dict[int, str]:
        return self.queries.broker_member_group(cluster, broker_name)

    def topic_names(self) -> list[str]:
        return self.queries.topic_names()

    def all_topic_list_body(self) -> bytes:
        return self.queries.all_topic_list_body()

    def all_topic_list_sliced(self, limit: int) -> Steps[bytes]:
        return self.queries.all_topic_list_sliced(limit)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        return self.queries.topics_by_cluster(cluster)

    def topics_by_cluster_sliced(self, cluster: str, limit: int) -> Steps[bytes]:
        return self.queries.topics_by_cluster_sliced(cluster, limit)

    def topics_by_sys_flag_sliced(self, accept: Callable[[int], object], limit: int) -> Steps[bytes]:
        return self.queries.topics_by_sys_flag_sliced(accept, limit)

    def system_topic_list(self) -> tuple[list[str], Optional[str]]:
        return self.queries.system_topic_list()

    def unit_topics(self) -> list[str]:
        return self.queries.unit_topics()

    def has_unit_sub_topics(self) -> list[str]:
        return self.queries.has_unit_sub_topics()

    def has_unit_sub_ununit_topics(self) -> list[str]:
        return self.queries.has_unit_sub_ununit_topics()

    def stats(self) -> dict[str, int]:
        return self.queries.stats()

    # -- whole-table operations ---------------------------------------------------------
    def clear(self) -> None:
        """Forget everything (events are emitted for every topic that disappears)."""
        self._restored()
        tables = self.tables
        with self.changes.operation(tables):
            for topic in list(tables.topic_queue_table):
                tables.remove_topic(topic)
        tables.reset()

    def replace_tables(self, other: Union[RouteInfoManager, RouteTables]) -> None:
        """Take over every table (and its indexes) of ``other``, a RouteInfoManager or RouteTables built and
        checked apart (a snapshot being restored): all or nothing. This manager keeps its clock, events and
        change followers, who hear that everything changed."""
        self._restored()
        self.tables.adopt(other.tables if isinstance(other, RouteInfoManager) else other)

    replace_from_rows = _changing("tables", RouteTables.replace_from_rows)
    apply_topic_rows = _changing("tables", RouteTables.apply_topic_rows)
    update_broker_rows = _changing("tables", RouteTables.update_broker_rows)
    apply_topic_shapes = _changing("tables", RouteTables.apply_topic_shapes)

    def check_invariants(self) -> None:
        """Raise AssertionError if the tables contradict each other (used by tests)."""
        check_invariants(self.tables, self.body_cache)
