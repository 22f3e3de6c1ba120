"""RouteInfoManager: the five route tables and every change made to them.

Pure Python: no sockets, no reactor. Time comes from ``clock.seconds()`` (production: a
monotonic clock; tests: ``task.Clock``). The reactor is single-threaded, so each call runs
to completion, which gives the atomicity Java gets from its read-write lock.

Semantics are 5.x's (which reproduce 4.9's results for 4.x brokers), with these
deliberate differences, each noted where it happens:
- unregistration is synchronous (5.x queues it for a batch worker) and costs O(topics of
  the broker) thanks to a reverse index brokerName -> topics;
- a refused single-topic registration changes nothing (Java leaves the cluster entry and
  an empty BrokerData behind);
- connection close and expiry remove exactly the registration bound to that connection /
  that live entry (5.x searches BrokerDatas of the same cluster for the address, and leaves
  a live entry that no BrokerData lists in place forever, re-closing it on every scan);
- a broker name losing its last address leaves every cluster set (Java: only the
  request's cluster).

Read-only queries and the route cache live in ``RouteQueries`` (queries.py), liveness
refreshes and admin operations in ``RouteAdmin`` (admin.py).
"""

from contextlib import contextmanager
from itertools import filterfalse

from namesrv.clock import MonotonicClock
from namesrv.observe.eventlog import NullEventLog
from namesrv.routes import bulk
from namesrv.routes.admin import RouteAdmin
from namesrv.routes.changes import RouteChanges
from namesrv.routes.liveness import DeadlineQueue
from namesrv.routes.model import (
    DEFAULT_HEARTBEAT_TIMEOUT_MILLIS, MASTER_ID, PERM_WRITE, BrokerData, BrokerLiveInfo, DataVersion, QueueData,
    RegisterBrokerResult, RemovedBroker, TopicConfigSerializeWrapper, shared_queue_data)
from namesrv.routes.queries import RouteQueries


class RouteInfoManager(RouteQueries, RouteAdmin):
    """The route tables (behaviour.md §1) and the algorithms that change them.

    Tables (public for reading, never mutate them from outside):
    ``topic_queue_table`` topic -> {brokerName: QueueData}; ``broker_addr_table`` brokerName
    -> BrokerData; ``cluster_addr_table`` cluster -> set(brokerName); ``broker_live_table``
    (cluster, brokerAddr) -> BrokerLiveInfo; ``filter_server_table`` (cluster, brokerAddr) ->
    [addr]; ``topic_queue_mapping_info_table`` topic -> {brokerName: mapping info dict}.
    """

    def __init__(self, clock=None, events=None, default_heartbeat_timeout_millis=DEFAULT_HEARTBEAT_TIMEOUT_MILLIS):
        self.clock = clock if clock is not None else MonotonicClock()
        self.events = events if events is not None else NullEventLog()
        self.default_heartbeat_timeout_millis = default_heartbeat_timeout_millis
        self.changes = RouteChanges()   # survives resets: listeners stay subscribed
        self._table_epoch = 0           # renewed by every reset (see registration_token)
        self._mark_counter = 0
        self._created_alone = None      # set by a bulk first registration, read when its operation ends
        self._reset_tables()

    def _reset_tables(self):
        self.topic_queue_table = {}
        self.broker_addr_table = {}
        self.cluster_addr_table = {}
        self.broker_live_table = {}
        self.filter_server_table = {}
        self.topic_queue_mapping_info_table = {}
        self._broker_topics = {}   # brokerName -> set(topic) having its QueueData
        self._by_connection = {}   # connection -> set((cluster, brokerAddr)) bound to it
        self._deadlines = DeadlineQueue()
        self._touched = None       # topic -> broker names before the running operation
        # brokerName -> a number never used before, renewed whenever its BrokerData, cluster
        # membership or set of topics changes (see registration_token); a reset renews the epoch
        self._broker_marks = {}
        self._table_epoch += 1
        self.reset_caches()

    # -- change tracking --------------------------------------------------------------
    @contextmanager
    def _changing(self):
        """One operation: collects the topics whose broker-name set it changes and reports them.

        Topics that went from the same brokers to the same brokers share one
        ``topic_route_changed`` event (``topics``: the list; a lone topic keeps the ``topic``
        field): a broker's first registration of 10,000 topics is one event, not 10,000.
        """
        outer = self._touched is not None
        if not outer:
            self._touched = {}
        self.changes.begin()
        try:
            yield
        finally:
            if not outer:
                touched, self._touched = self._touched, None
                self.changes.end()
                table = self.topic_queue_table
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

    def _touch(self, topic):
        if topic not in self._touched:
            qmap = self.topic_queue_table.get(topic)
            self._touched[topic] = tuple(qmap) if qmap else ()

    def _put_queue_data(self, topic, queue_data):
        queue_data = shared_queue_data(queue_data)
        qmap = self.topic_queue_table.get(topic)
        name = queue_data.broker_name
        if qmap is None:
            self._touch(topic)
            qmap = self.topic_queue_table[topic] = {}
            self._topic_set_changed()
        old = qmap.get(name)
        if old is None:
            self._touch(topic)
            qmap[name] = queue_data
            self._broker_topics.setdefault(name, set()).add(topic)
            self._mark_broker(name)
        elif old != queue_data:
            qmap[name] = queue_data
        else:
            return
        self._queue_data_changed(topic)

    def _put_broker_topics(self, broker_name, topic_configs, perm_mask=-1, only_missing=False):
        """``_put_queue_data`` for many topics of one broker: {topic: TopicConfig}, perm & ``perm_mask``;
        with ``only_missing``, only topics the broker has no QueueData in yet.

        The same bookkeeping (route cache, trackers, reverse index, touched topics, one change
        notification), done once per call where it can be: a first registration of 10,000
        topics spends its time here.
        """
        if not topic_configs:
            return
        if self._touched is None:
            with self._changing():
                return self._put_broker_topics(broker_name, topic_configs, perm_mask, only_missing)
        table = self.topic_queue_table
        touched = self._touched
        mine = self._broker_topics.get(broker_name)
        if mine is None:
            mine = self._broker_topics[broker_name] = set()
        topics = list(topic_configs)
        queue_datas = bulk.queue_datas(broker_name, topic_configs.values(), perm_mask)
        if bulk.none_known(table, topics):
            # Topics nobody has yet (a broker's first registration): the same bookkeeping as the
            # loop below, in bulk, in the same order.
            created = [{broker_name: queue_data} for queue_data in queue_datas]
            if touched:
                touched.update(dict.fromkeys(filterfalse(touched.__contains__, topics), ()))
            else:   # the operation's first change: _changing can name the change without a scan
                self._touched = dict.fromkeys(topics, ())
                self._created_alone = (broker_name, topics, created)
            table.update(zip(topics, created))
            mine.update(topics)
            self._mark_broker(broker_name)
            self._topic_set_changed()
            self._queue_datas_changed(topics)
            return
        queue_datas = list(queue_datas)
        if bulk.nothing_to_put(table, topics, broker_name, queue_datas, only_missing):
            return   # a re-registration of the same topics (new DataVersion, same queues)
        changed = []
        added = new_topic = False
        for topic, queue_data in zip(topics, queue_datas):
            qmap = table.get(topic)
            if only_missing and qmap is not None and broker_name in qmap:
                continue
            if qmap is None:
                if topic not in touched:
                    touched[topic] = ()
                table[topic] = {broker_name: queue_data}
                new_topic = True
            else:
                old = qmap.get(broker_name)
                if old is None:
                    if topic not in touched:
                        touched[topic] = tuple(qmap)
                    qmap[broker_name] = queue_data
                elif old is queue_data or old == queue_data:
                    continue
                else:
                    qmap[broker_name] = queue_data
                    changed.append(topic)
                    continue
            mine.add(topic)
            added = True
            changed.append(topic)
        if not changed:
            return
        if added:
            self._mark_broker(broker_name)
        if new_topic:
            self._topic_set_changed()
        self._queue_datas_changed(changed)

    def _remove_queue_data(self, topic, broker_name):
        qmap = self.topic_queue_table.get(topic)
        if not qmap or broker_name not in qmap:
            return
        self._touch(topic)
        del qmap[broker_name]
        self._forget_topic_of(broker_name, topic)
        if not qmap:
            del self.topic_queue_table[topic]
            self._topic_set_changed()
        self._queue_data_changed(topic)

    def _remove_topic(self, topic):
        qmap = self.topic_queue_table.get(topic)
        if qmap is None:
            return
        self._touch(topic)
        for name in qmap:
            self._forget_topic_of(name, topic)
        del self.topic_queue_table[topic]
        self._topic_set_changed()
        self._queue_data_changed(topic)

    def _forget_topic_of(self, broker_name, topic):
        self._mark_broker(broker_name)
        topics = self._broker_topics.get(broker_name)
        if topics is not None:
            topics.discard(topic)
            if not topics:
                del self._broker_topics[broker_name]

    def _set_perm(self, topic, broker_name, perm):
        qmap = self.topic_queue_table[topic]
        old = qmap[broker_name]
        if old.perm != perm:   # stored QueueData are shared: replaced, never changed in place
            qmap[broker_name] = shared_queue_data(QueueData(old.broker_name, old.read_queue_nums,
                                                            old.write_queue_nums, perm, old.topic_sys_flag))
            self._queue_data_changed(topic)

    # -- REGISTER_BROKER --------------------------------------------------------------
    def register_broker(self, cluster, broker_addr, broker_name, broker_id, ha_server_addr,
                        topic_config_wrapper=None, filter_server_list=None, connection=None,
                        zone_name=None, heartbeat_timeout_millis=None, enable_acting_master=None,
                        delete_topic_with_broker_registration=False):
        """Register (or refresh) one broker (behaviour.md §3.2). ``None`` means refused.

        ``enable_acting_master`` None marks a pre-5.0 broker (no header). ``filter_server_list``
        None leaves the filter servers as they are (legacy bodies).
        """
        wrapper = topic_config_wrapper
        if wrapper is None:
            wrapper = TopicConfigSerializeWrapper(DataVersion(0, 0, 0))
        table = wrapper.topic_config_table
        broker_data = self.broker_addr_table.get(broker_name)
        known_id = broker_data is not None and broker_id in broker_data.broker_addrs
        if not known_id and len(table) == 1:
            # 5.x: a one-topic registration from an unregistered id is an incremental update
            # racing a restart (PITFALLS 4). Checked before any change: nothing half-applied.
            return None
        with self._changing():
            return self._register(cluster, broker_addr, broker_name, broker_id, ha_server_addr, wrapper,
                                  filter_server_list, connection, zone_name, heartbeat_timeout_millis,
                                  enable_acting_master, delete_topic_with_broker_registration)

    def _register(self, cluster, broker_addr, broker_name, broker_id, ha_server_addr, wrapper,
                  filter_server_list, connection, zone_name, heartbeat_timeout_millis, enable_acting_master,
                  delete_topics):
        key = (cluster, broker_addr)
        data_version = wrapper.data_version
        previous = self.broker_live_table.get(key)
        changed = previous is None or previous.data_version != data_version
        result = RegisterBrokerResult(first=previous is None, changed=changed)

        names = self.cluster_addr_table.get(cluster)
        if names is None:
            names = self.cluster_addr_table[cluster] = set()
        if broker_name not in names:
            names.add(broker_name)
            self._mark_broker(broker_name)
            self._brokers_changed()

        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = self.broker_addr_table[broker_name] = BrokerData(cluster, broker_name, {})
            self._mark_broker(broker_name)
            self._brokers_changed()
        acting = enable_acting_master is True
        if broker_data.enable_acting_master != acting or broker_data.zone_name != zone_name:
            broker_data.enable_acting_master = acting
            broker_data.zone_name = zone_name
            self._broker_data_changed(broker_name)

        addrs = broker_data.broker_addrs
        result.min_broker_id_changed = bool(addrs) and broker_id < min(addrs)
        # Role switch: one ip:port is listed under one id only.
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
            self._broker_data_changed(broker_name)

        old_addr = addrs.get(broker_id)
        if old_addr is not None and old_addr != broker_addr:
            holder = self.broker_live_table.get((cluster, old_addr))
            if holder is not None and holder.data_version.state_version > data_version.state_version:
                # Stale-address guard (5.x): a newer member already holds this id.
                self._drop_live(key)
                result.stale = True
                return result
        if old_addr != broker_addr:
            addrs[broker_id] = broker_addr
            self._broker_data_changed(broker_name)
        register_first = register_first or not old_addr

        is_master = broker_id == MASTER_ID
        is_prime_slave = enable_acting_master is not None and not is_master and broker_id == min(addrs)
        if is_master or is_prime_slave:
            mappings = wrapper.topic_queue_mapping_info_map
            if delete_topics and not mappings:
                for topic in list(self._broker_topics.get(broker_name, ())):
                    if topic not in wrapper.topic_config_table:
                        self._remove_queue_data(topic, broker_name)
            wipe_write = is_prime_slave and broker_data.enable_acting_master
            # Per-topic test (5.x) when nothing changed: lets split registrations carrying one
            # DataVersion merge (only topics the broker is missing from are put).
            self._put_broker_topics(broker_name, wrapper.topic_config_table,
                                    ~PERM_WRITE if wipe_write else -1, only_missing=not (register_first or changed))
            if changed or register_first:
                for topic, info in mappings.items():
                    by_broker = self.topic_queue_mapping_info_table.setdefault(topic, {})
                    if by_broker.get(info["bname"]) != info:
                        by_broker[info["bname"]] = info
                        self._queue_data_changed(topic)

        timeout = self.default_heartbeat_timeout_millis if heartbeat_timeout_millis is None \
            else heartbeat_timeout_millis
        self._bind_live(key, BrokerLiveInfo(self.clock.seconds(), timeout, data_version, connection,
                                            ha_server_addr, broker_name, broker_id))
        if filter_server_list is not None:
            self._set_filter_servers(key, filter_server_list)
        self._tell_master(result, cluster, addrs, broker_id)
        return result

    def _tell_master(self, result, cluster, addrs, broker_id):
        """A slave's answer names its live master (masterAddr, haServerAddr)."""
        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master = self.broker_live_table.get((cluster, master_addr))
                if master is not None:
                    result.master_addr = master_addr
                    result.ha_server_addr = master.ha_server_addr

    def _mark_broker(self, broker_name):
        self._mark_counter += 1
        self._broker_marks[broker_name] = self._mark_counter

    def registration_token(self, broker_name):
        """Equal for two moments only if nothing that re-applying a registration of ``broker_name``
        could change has changed in between: its BrokerData (addresses, acting master, zone),
        its cluster membership, the set of topics it has QueueData in, or the whole tables.

        Everything else a registration writes is either its own (live entry, filter servers;
        gone with the live entry) or written only when its DataVersion changes (QueueData of
        topics it still has, static-topic mappings), which an identical body does not.
        """
        return self._table_epoch, self._broker_marks.get(broker_name)

    def refresh_unchanged_registration(self, cluster, broker_addr, token, connection=None,
                                       heartbeat_timeout_millis=None):
        """Apply a registration identical (header and body) to the last one applied for this broker.

        Valid only while its ``registration_token`` is the one recorded right after that
        one was applied: re-applying it would then change nothing but the broker's
        liveness, which is all this does, without decoding the body. Other brokers'
        registrations do not matter. Returns the RegisterBrokerResult, or None when the
        caller must take the full path.
        """
        key = (cluster, broker_addr)
        live = self.broker_live_table.get(key)
        if live is None or token != self.registration_token(live.broker_name):
            return None
        broker_data = self.broker_addr_table.get(live.broker_name) if live is not None else None
        if broker_data is None or broker_data.broker_addrs.get(live.broker_id) != broker_addr:
            return None
        timeout = self.default_heartbeat_timeout_millis if heartbeat_timeout_millis is None \
            else heartbeat_timeout_millis
        self._bind_live(key, BrokerLiveInfo(self.clock.seconds(), timeout, live.data_version, connection,
                                            live.ha_server_addr, live.broker_name, live.broker_id))
        result = RegisterBrokerResult(first=False, changed=False)
        self._tell_master(result, cluster, broker_data.broker_addrs, live.broker_id)
        return result

    # -- live entries and filter servers ----------------------------------------------
    def _bind_live(self, key, live):
        old = self.broker_live_table.get(key)
        if old is not None and old.connection is not None:
            self._unbind_connection(old.connection, key)
        self.broker_live_table[key] = live
        if live.connection is not None:
            self._by_connection.setdefault(live.connection, set()).add(key)
        self._deadlines.push(key, live)

    def _unbind_connection(self, connection, key):
        keys = self._by_connection.get(connection)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_connection[connection]

    def _drop_live(self, key):
        live = self.broker_live_table.pop(key, None)
        if live is not None and live.connection is not None:
            self._unbind_connection(live.connection, key)
        if key in self.filter_server_table:
            self._set_filter_servers(key, [])
        return live

    def _set_filter_servers(self, key, servers):
        old = self.filter_server_table.get(key)
        if servers:
            servers = list(servers)
            if old == servers:
                return
            self.filter_server_table[key] = servers
        elif old is None:
            return
        else:
            del self.filter_server_table[key]
        cluster, addr = key
        for broker_data in self.broker_addr_table.values():
            if broker_data.cluster == cluster and addr in broker_data.broker_addrs.values():
                self._invalidate_broker_routes(broker_data.broker_name)

    # -- UNREGISTER_BROKER, connection close, expiry ------------------------------------
    def unregister_broker(self, cluster, broker_addr, broker_name, broker_id=None, expected=None):
        """Remove one broker address (behaviour.md §4.2, run at once instead of batched).

        Returns True when a live entry or an address was removed. ``expected``: only act
        if the live entry of (cluster, brokerAddr) is that very object (PITFALLS 3: a
        removal decided earlier must not hit a broker that re-registered since).
        """
        key = (cluster, broker_addr)
        if expected is not None and self.broker_live_table.get(key) is not expected:
            return False
        with self._changing():
            return self._unregister(cluster, broker_addr, broker_name)

    def _unregister(self, cluster, broker_addr, broker_name):
        removed = self._drop_live((cluster, broker_addr)) is not None
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            return removed
        addrs = broker_data.broker_addrs
        gone = [i for i, a in addrs.items() if a == broker_addr]  # 5.x removes by address, not id
        for broker_id in gone:
            del addrs[broker_id]
        if gone:
            removed = True
            self._broker_data_changed(broker_name)
        if not addrs:
            self._remove_broker_name(broker_name)
        elif broker_data.enable_acting_master and min(addrs) > MASTER_ID:
            # The master left a group that allows acting masters: its queues become read-only.
            for topic in list(self._broker_topics.get(broker_name, ())):
                queue_data = self.topic_queue_table[topic][broker_name]
                self._set_perm(topic, broker_name, queue_data.perm & ~PERM_WRITE)
        return removed

    def _remove_broker_name(self, broker_name):
        self._broker_marks.pop(broker_name, None)
        self._invalidate_broker_routes(broker_name)
        del self.broker_addr_table[broker_name]
        for cluster in [c for c, names in self.cluster_addr_table.items() if broker_name in names]:
            names = self.cluster_addr_table[cluster]
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster]
        self._brokers_changed()
        for topic in list(self._broker_topics.get(broker_name, ())):
            self._remove_queue_data(topic, broker_name)

    def _remove_registration(self, key, live):
        """Remove the registration ``live`` stands for; returns (brokerName, brokerId)."""
        cluster, broker_addr = key
        broker_name, broker_id = live.broker_name, live.broker_id
        broker_data = self.broker_addr_table.get(broker_name)
        listed = [i for i, a in broker_data.broker_addrs.items() if a == broker_addr] if broker_data else []
        if listed:
            broker_id = min(listed)
            self._unregister(cluster, broker_addr, broker_name)
        else:
            self._drop_live(key)  # its address was taken over; only the live entry is left
        return broker_name, broker_id

    def on_connection_closed(self, connection):
        """Remove every registration bound to ``connection``; other connections change nothing.

        Returns the removed brokers as a list of RemovedBroker (``connection`` set).
        """
        keys = self._by_connection.get(connection)
        if not keys:
            return []
        removed = []
        with self._changing():
            for key in sorted(keys):
                live = self.broker_live_table.get(key)
                if live is None or live.connection is not connection:
                    continue
                broker_name, broker_id = self._remove_registration(key, live)
                removed.append(RemovedBroker(key[0], broker_name, broker_id, key[1], connection=connection))
        self._by_connection.pop(connection, None)
        return removed

    def scan_not_active_brokers(self):
        """Remove every registration whose heartbeat is older than its timeout.

        Returns a list of RemovedBroker with ``age_ms`` and the ``connection`` the caller
        should close (None after a warm restart). Cost: O(expired + refreshed) log n.
        """
        now = self.clock.seconds()
        due = list(self._deadlines.pop_expired(now, self.broker_live_table.get))
        expired = []
        with self._changing():
            for key, live in due:
                if self.broker_live_table.get(key) is not live:
                    continue
                broker_name, broker_id = self._remove_registration(key, live)
                age_ms = int(round((now - live.last_update) * 1000))
                expired.append(RemovedBroker(key[0], broker_name, broker_id, key[1], age_ms, live.connection))
        return expired

    # -- whole-table operations ---------------------------------------------------------
    def clear(self):
        """Forget everything (events are emitted for every topic that disappears)."""
        with self._changing():
            for topic in list(self.topic_queue_table):
                self._remove_topic(topic)
        self._reset_tables()

    def replace_tables(self, other):
        """Take over every table (and its indexes) of ``other``, a manager built and checked apart
        (a snapshot being restored): all or nothing. This manager keeps its clock, events and
        change followers, who hear that everything changed."""
        self._reset_tables()
        for name in self._TABLES:
            setattr(self, name, getattr(other, name))
        self._topic_set_changed()
        self._brokers_changed()

    #: the state replace_tables moves: the six tables and the indexes kept beside them
    _TABLES = ("topic_queue_table", "broker_addr_table", "cluster_addr_table", "broker_live_table",
               "filter_server_table", "topic_queue_mapping_info_table", "_broker_topics", "_by_connection",
               "_deadlines")

    def check_invariants(self):
        """Raise AssertionError if the tables contradict each other (used by tests)."""
        from namesrv.routes.invariants import check_invariants
        check_invariants(self)
