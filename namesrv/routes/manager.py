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

from namesrv.timing.clock import MonotonicClock
from namesrv.routes.admin import RouteAdmin
from namesrv.routes.bodycache import DEFAULT_MAX_BYTES as DEFAULT_BODY_CACHE_MAX_BYTES, RouteBodyCache
from namesrv.routes.changes import RouteChanges
from namesrv.routes.invariants import check_invariants
from namesrv.routes.model import DEFAULT_HEARTBEAT_TIMEOUT_MILLIS
from namesrv.routes.queries import RouteQueries
from namesrv.routes.registration import BrokerRegistrations
from namesrv.routes.shortcut import UnchangedRegistrations
from namesrv.routes.tables import RouteTables


def _table(name):
    """The facade's view of one table of ``tables`` (read workers' replicas replace whole tables)."""
    def get(self):
        return getattr(self.tables, name)

    def set_(self, value):
        setattr(self.tables, name, value)
    return property(get, set_, doc="``tables.%s``" % name)


class RouteInfoManager:
    """The route tables (behaviour.md §1) and the algorithms that change them.

    Tables (public for reading, never mutate them from outside): ``topic_queue_table`` topic
    -> {brokerName: QueueData}; ``broker_addr_table`` brokerName -> BrokerData;
    ``cluster_addr_table`` cluster -> set(brokerName); ``broker_live_table`` (cluster,
    brokerAddr) -> BrokerLiveInfo; ``filter_server_table`` (cluster, brokerAddr) -> [addr];
    ``topic_queue_mapping_info_table`` topic -> {brokerName: mapping info dict}.
    """

    topic_queue_table = _table("topic_queue_table")
    broker_addr_table = _table("broker_addr_table")
    cluster_addr_table = _table("cluster_addr_table")
    broker_live_table = _table("broker_live_table")
    filter_server_table = _table("filter_server_table")
    topic_queue_mapping_info_table = _table("topic_queue_mapping_info_table")

    def __init__(self, clock=None, events=None, default_heartbeat_timeout_millis=DEFAULT_HEARTBEAT_TIMEOUT_MILLIS,
                 body_cache_max_bytes=DEFAULT_BODY_CACHE_MAX_BYTES, share_queue_maps=False, master_hint=None):
        self.clock = clock if clock is not None else MonotonicClock()
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
        self.restoring = None

    def _restored(self):
        """Before any change of the tables: a restore still running ends now (its chunks would overwrite it)."""
        if self.restoring is not None:
            self.restoring.finish_now()

    def finish_restore(self):
        """Whole tables from now on (a snapshot still being restored is restored at once)."""
        self._restored()

    @property
    def events(self):
        """Where ``topic_route_changed`` events go (the change tracker's event log)."""
        return self.changes.events

    @events.setter
    def events(self, events):
        self.changes.events = events

    @property
    def body_cache(self):
        return self.changes.body_cache

    @property
    def default_heartbeat_timeout_millis(self):
        """A registration's heartbeat timeout when its header names none."""
        return self.registrations.default_heartbeat_timeout_millis

    @default_heartbeat_timeout_millis.setter
    def default_heartbeat_timeout_millis(self, millis):
        self.registrations.default_heartbeat_timeout_millis = millis

    # -- followers ---------------------------------------------------------------------
    def add_change_listener(self, callback):
        """``callback()`` after any change a read could see (e.g. AnswerCache.invalidate); kept across resets."""
        self.changes.add_listener(callback)

    def add_min_broker_id_listener(self, callback):
        """``callback(MinBrokerIdChange)`` whenever a group's lowest id changes as 5.x tells its brokers (905)."""
        self.registrations.min_broker_id_listeners.append(callback)

    def track_topic_changes(self, tracker):
        """Add to ``tracker`` (a set with a ``full`` flag) every topic whose QueueData or static-topic
        mapping changes from now on; a reset of all tables sets ``tracker.full`` instead."""
        return self.changes.track(tracker)

    def untrack_topic_changes(self, tracker):
        self.changes.untrack(tracker)

    @property
    def change_generation(self):
        return self.changes.generation

    @property
    def topic_set_generation(self):
        """Changes only when a topic appears or disappears (or the tables are replaced)."""
        return self.changes.topic_set_generation

    def reset_caches(self):
        """Drop every cached answer body: the tables were replaced (a snapshot restore, a
        replica's new broker tables). Every follower hears that everything changed."""
        self.changes.everything_changed()

    # -- registrations ------------------------------------------------------------------
    def register_broker(self, cluster, broker_addr, broker_name, broker_id, ha_server_addr,
                        topic_config_wrapper=None, filter_server_list=None, connection=None,
                        zone_name=None, heartbeat_timeout_millis=None, enable_acting_master=None,
                        delete_topic_with_broker_registration=False):
        """Register (or refresh) one broker (behaviour.md §3.2). ``None`` means refused."""
        self._restored()
        return self.registrations.register_broker(
            cluster, broker_addr, broker_name, broker_id, ha_server_addr, topic_config_wrapper, filter_server_list,
            connection, zone_name, heartbeat_timeout_millis, enable_acting_master,
            delete_topic_with_broker_registration)

    def unregister_broker(self, cluster, broker_addr, broker_name, broker_id=None, expected=None):
        self._restored()
        return self.registrations.unregister_broker(cluster, broker_addr, broker_name, broker_id, expected)

    def on_connection_closed(self, connection):
        return self.on_connections_closed([connection])

    def on_connections_closed(self, connections):
        if self.restoring is not None and any(connection in self.tables.by_connection for connection in connections):
            self._restored()
        return self.registrations.on_connections_closed(connections)

    def scan_not_active_brokers(self):
        self._restored()
        return self.registrations.scan_not_active_brokers()

    def route_committed_master(self, broker_name, master_addr, master_epoch):
        """A master the controllers committed, listed before it registers as one (registration.py)."""
        self._restored()
        return self.registrations.route_committed_master(broker_name, master_addr, master_epoch)

    # -- liveness refreshes and admin operations -------------------------------------------
    def is_broker_topic_config_changed(self, cluster, broker_addr, data_version):
        return self.admin.is_broker_topic_config_changed(cluster, broker_addr, data_version)

    def query_broker_data_version(self, cluster, broker_addr):
        return self.admin.query_broker_data_version(cluster, broker_addr)

    def wipe_write_perm_of_broker(self, broker_name):
        self._restored()
        return self.admin.wipe_write_perm_of_broker(broker_name)

    def add_write_perm_of_broker(self, broker_name):
        self._restored()
        return self.admin.add_write_perm_of_broker(broker_name)

    def delete_topic(self, topic, cluster=None):
        self._restored()
        return self.admin.delete_topic(topic, cluster)

    def register_topic(self, topic, queue_datas):
        self._restored()
        return self.admin.register_topic(topic, queue_datas)

    # -- queries --------------------------------------------------------------------------
    def pickup_topic_route(self, topic, support_acting_master=False):
        return self.queries.pickup_topic_route(topic, support_acting_master)

    def broker_topic_count(self, broker_name):
        return self.queries.broker_topic_count(broker_name)

    def topic_broker_names(self, topic):
        return self.queries.topic_broker_names(topic)

    def cluster_info_body(self):
        return self.queries.cluster_info_body()

    def get_all_cluster_info(self):
        return self.queries.get_all_cluster_info()

    def broker_member_group(self, cluster, broker_name):
        return self.queries.broker_member_group(cluster, broker_name)

    def topic_names(self):
        return self.queries.topic_names()

    def all_topic_list_body(self):
        return self.queries.all_topic_list_body()

    def all_topic_list_sliced(self, limit):
        return self.queries.all_topic_list_sliced(limit)

    def topics_by_cluster(self, cluster):
        return self.queries.topics_by_cluster(cluster)

    def topics_by_cluster_sliced(self, cluster, limit):
        return self.queries.topics_by_cluster_sliced(cluster, limit)

    def topics_by_sys_flag_sliced(self, accept, limit):
        return self.queries.topics_by_sys_flag_sliced(accept, limit)

    def system_topic_list(self):
        return self.queries.system_topic_list()

    def unit_topics(self):
        return self.queries.unit_topics()

    def has_unit_sub_topics(self):
        return self.queries.has_unit_sub_topics()

    def has_unit_sub_ununit_topics(self):
        return self.queries.has_unit_sub_ununit_topics()

    def stats(self):
        return self.queries.stats()

    # -- whole-table operations ---------------------------------------------------------
    def clear(self):
        """Forget everything (events are emitted for every topic that disappears)."""
        self._restored()
        tables = self.tables
        with self.changes.operation(tables):
            for topic in list(tables.topic_queue_table):
                tables.remove_topic(topic)
        tables.reset()

    def replace_tables(self, other):
        """Take over every table (and its indexes) of ``other``, a RouteInfoManager or RouteTables built and
        checked apart (a snapshot being restored): all or nothing. This manager keeps its clock, events and
        change followers, who hear that everything changed."""
        self._restored()
        self.tables.adopt(other.tables if isinstance(other, RouteInfoManager) else other)

    def replace_from_rows(self, topics=None, mappings=None, brokers=None, clusters=None, filters=None, live=None,
                          now=None, shapes=None):
        """Replace the tables given as rows of ``rows.py``; see ``RouteTables.replace_from_rows``."""
        self._restored()
        self.tables.replace_from_rows(topics, mappings, brokers, clusters, filters, live, now, shapes)

    def apply_topic_rows(self, topics, mappings=None):
        """Set the QueueData (and mappings) of the topics given as rows; see ``RouteTables.apply_topic_rows``."""
        self._restored()
        self.tables.apply_topic_rows(topics, mappings)

    def update_broker_rows(self, brokers, clusters, filters, gone=None, memberships=None):
        """Bring the broker-level tables to these rows; see ``RouteTables.update_broker_rows``."""
        self._restored()
        self.tables.update_broker_rows(brokers, clusters, filters, gone, memberships)

    def apply_topic_shapes(self, shapes, mappings=None):
        """The same, with the topics given by shape (``rows.topic_shapes``)."""
        self._restored()
        self.tables.apply_topic_shapes(shapes, mappings)

    def check_invariants(self):
        """Raise AssertionError if the tables contradict each other (used by tests)."""
        check_invariants(self.tables, self.body_cache)
