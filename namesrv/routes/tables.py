"""The route tables and the indexes kept beside them, with the changes every algorithm is made of.

Each change is reported to the change tracker (``changes``, a RouteChanges), which drops
the cached bodies built from what changed and tells the followers; callers group changes
into operations (``changes.operation(tables)``). Registration, expiry, admin operations
and restores are written in terms of the calls below.

Tables (public for reading, never mutate them from outside): ``topic_queue_table`` topic ->
{brokerName: QueueData}; ``broker_addr_table`` brokerName -> BrokerData;
``cluster_addr_table`` cluster -> set(brokerName); ``broker_live_table`` (cluster,
brokerAddr) -> BrokerLiveInfo; ``filter_server_table`` (cluster, brokerAddr) -> [addr];
``topic_queue_mapping_info_table`` topic -> {brokerName: mapping info dict}. Indexes:
``broker_topics`` brokerName -> set(topic) having its QueueData; ``by_connection``
connection -> set((cluster, brokerAddr)) bound to it; ``deadlines`` the live entries by
deadline (liveness.py).

Memory at a fleet's size: every topic name is stored interned, so the table and all of its
brokers' sets hold one string per topic, not one per broker that registered it (each
registration body decodes its own copies); and a broker's set that grew by additions is copied
to a table half the size (``compacted``). One process holding 1,000 brokers' 2,000,000 entries
(20 per topic): 348 -> 174 MiB, of which the brokers' sets 125 -> 63 MiB.
"""

from contextlib import contextmanager
from itertools import filterfalse
from sys import getsizeof, intern

from namesrv.routes import bulk
from namesrv.routes.liveness import DeadlineQueue
from namesrv.routes.model import BrokerData, BrokerLiveInfo, DataVersion, QueueData, shared_queue_data
from namesrv.routes.queuemaps import QueueMapInterner

#: what ``adopt`` takes over: the six tables and the indexes kept beside them
STATE = ("topic_queue_table", "broker_addr_table", "cluster_addr_table", "broker_live_table",
         "filter_server_table", "topic_queue_mapping_info_table", "broker_topics", "by_connection", "deadlines")


class RouteTables:
    def __init__(self, changes, share_queue_maps=False):
        """``share_queue_maps``: topics' maps are only ever replaced whole (a read worker's replica),
        so topics with the same QueueData share one read-only map (queuemaps.py)."""
        self.changes = changes
        self.queue_maps = QueueMapInterner() if share_queue_maps else None
        self.epoch = 0           # renewed by every reset (see registration_token)
        self._mark_counter = 0
        self.reset()

    _waiting_removals = None   # inside ``removals_together``: broker names whose QueueData wait

    def reset(self):
        """Empty tables; the followers hear that everything changed."""
        self.topic_queue_table = {}
        self.broker_addr_table = {}
        self.cluster_addr_table = {}
        self.broker_live_table = {}
        self.filter_server_table = {}
        self.topic_queue_mapping_info_table = {}
        self.broker_topics = {}
        self.by_connection = {}
        self.deadlines = DeadlineQueue()
        # brokerName -> a number never used before, renewed whenever its BrokerData, cluster
        # membership or set of topics changes (see registration_token); a reset renews the epoch
        self._broker_marks = {}
        self.epoch += 1
        self.changes.everything_changed()

    def adopt(self, other):
        """Take over every table (and its indexes) of ``other``, RouteTables built and checked apart (a
        snapshot being restored): all or nothing. The followers hear that everything changed."""
        self.reset()
        for name in STATE:
            setattr(self, name, getattr(other, name))
        self.changes.topic_set_changed()
        self.changes.brokers_changed()

    def replace_from_rows(self, topics=None, mappings=None, brokers=None, clusters=None, filters=None, live=None,
                          now=None, shapes=None):
        """Replace the tables given as rows of ``rows.py`` (trusted as to shape: a snapshot checks its
        values first); a table not given is kept. Snapshots restore through this call with every table,
        a replica can refresh its broker-level tables with it.

        ``live`` entries get ``last_update`` = ``now`` and no connection. The indexes of what is
        replaced are rebuilt, registration tokens are renewed and the followers hear that
        everything changed. ``shapes`` (``rows.topic_shapes``) replaces the topics as ``topics`` does.
        """
        if topics is not None:
            self.topic_queue_table, self.broker_topics = {}, {}
            self.apply_topic_rows(topics, report=False)
        if shapes is not None:
            self.topic_queue_table, self.broker_topics = _tables_from_shapes(shapes, self.queue_maps)
        if mappings is not None:
            self.topic_queue_mapping_info_table = dict(mappings)
        if brokers is not None:
            self.broker_addr_table = {
                name: BrokerData(cluster, name, {broker_id: addr for broker_id, addr in addrs}, zone, bool(acting))
                for name, cluster, zone, acting, addrs in brokers}
        if clusters is not None:
            self.cluster_addr_table = {cluster: set(names) for cluster, names in clusters.items()}
        if filters is not None:
            self.filter_server_table = {(cluster, addr): list(servers) for cluster, addr, servers in filters}
        if live is not None:
            self.broker_live_table, self.by_connection, self.deadlines = {}, {}, DeadlineQueue()
            for cluster, addr, name, broker_id, ha, timeout, (timestamp, counter, state) in live:
                self.bind_live((cluster, addr), BrokerLiveInfo(now, timeout, DataVersion(timestamp, counter, state),
                                                               None, ha, name, broker_id))
        self._broker_marks = {}
        self.epoch += 1
        self.changes.everything_changed()

    def update_broker_rows(self, brokers, clusters, filters):
        """Bring the broker-level tables to these rows (a replica's publication, after its topics),
        telling the change tracker only what differs: the kept bodies of every topic whose brokers
        did not change stay (``replace_from_rows`` would drop them all, and a read worker would
        join 100,000 routes again after any change)."""
        changes, old_table = self.changes, self.broker_addr_table
        table, changed = {}, []
        for name, cluster, zone, acting, addrs in brokers:
            broker_data = BrokerData(cluster, name, {broker_id: addr for broker_id, addr in addrs}, zone, bool(acting))
            old = old_table.get(name)
            table[name] = old if old == broker_data else broker_data
            if old != broker_data:
                changed.append(name)
        changed.extend(name for name in old_table if name not in table)
        clusters = {cluster: set(names) for cluster, names in clusters.items()}
        members = {(cluster, name) for cluster, names in clusters.items() for name in names}
        members ^= {(cluster, name) for cluster, names in self.cluster_addr_table.items() for name in names}
        filters = {(cluster, addr): list(servers) for cluster, addr, servers in filters}
        moved = {key for key in filters.keys() | self.filter_server_table.keys()
                 if filters.get(key) != self.filter_server_table.get(key)}
        self.broker_addr_table, self.cluster_addr_table, self.filter_server_table = table, clusters, filters
        served = {addr for _, addr in moved}
        filtered = [broker_data.broker_name for broker_data in table.values()
                    if served and served.intersection(broker_data.broker_addrs.values())]
        changes.begin()
        touched = set(changed).union((name for _, name in members), filtered)
        for name in touched:
            self.mark_broker(name)
            changes.brokers_changed(name)
        if touched:
            changes.routes_of_brokers_changed([self.topics_of(name) for name in touched])
        changes.end()

    def apply_topic_rows(self, topics, mappings=None, report=True):
        """Set the QueueData of each topic of ``topics`` ({topic: queue_data_rows, or None: the topic is
        gone}) and, if given, its static-topic mappings ({topic: {brokerName: info}, or None}): a replica's
        part of the changed topics. The reverse index follows; ``report`` tells the change tracker."""
        maps = {topic: _queue_data_map(queue_datas) for topic, queue_datas in topics.items()}
        self.apply_topic_maps(maps, mappings, report)

    def apply_topic_shapes(self, shapes, mappings=None, report=True):
        """``apply_topic_rows`` with the topics as ``rows.topic_shapes`` (one map built per shape)."""
        templates = _shape_templates(shapes)
        if self.queue_maps is not None:   # shared below: no copy
            maps = {topic: {} if shape is None else templates[shape] for topic, shape in shapes["topics"].items()}
        else:
            maps = {topic: {} if shape is None else templates[shape].copy() for topic, shape in shapes["topics"].items()}
        self.apply_topic_maps(maps, mappings, report)

    def apply_topic_maps(self, maps, mappings=None, report=True):
        """Set each topic's map brokerName -> shared QueueData ({topic: map, empty when the topic is gone})."""
        table, broker_topics = self.topic_queue_table, self.broker_topics
        share = self.queue_maps.share if self.queue_maps is not None else None
        moved = set()   # broker names whose set of topics changed
        for topic, qmap in maps.items():
            topic = intern(topic)
            old = table.get(topic) or {}
            if qmap:
                table[topic] = share(qmap) if share is not None else qmap
            else:
                table.pop(topic, None)
            for name in old.keys() - qmap.keys():
                names = broker_topics.get(name)
                if names is not None:
                    names.discard(topic)
                    if not names:
                        del broker_topics[name]
                moved.add(name)
            for name in qmap.keys() - old.keys():
                broker_topics.setdefault(name, set()).add(topic)
                moved.add(name)
        for name in moved:
            self.mark_broker(name)
            names = broker_topics.get(name)
            if names is not None:
                broker_topics[name] = compacted(names)
        mapping_table = self.topic_queue_mapping_info_table
        for topic, by_broker in (mappings or {}).items():
            if by_broker is None:
                mapping_table.pop(topic, None)
            else:
                mapping_table[topic] = by_broker
        if report:   # one notification
            changes = self.changes
            changes.begin()
            changes.topic_set_changed()
            changes.queue_datas_changed(list(maps) + [t for t in mappings or () if t not in maps])
            changes.end()

    # -- the registration shortcut's token ------------------------------------------------
    def mark_broker(self, broker_name):
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
        return self.epoch, self._broker_marks.get(broker_name)

    def topics_of(self, broker_name):
        """The topics with QueueData of ``broker_name`` (do not change the set)."""
        return self.broker_topics.get(broker_name, ())

    # -- brokers and clusters ---------------------------------------------------------------
    def add_to_cluster(self, cluster, broker_name):
        names = self.cluster_addr_table.get(cluster)
        if names is None:
            names = self.cluster_addr_table[cluster] = set()
        if broker_name not in names:
            names.add(broker_name)
            self.mark_broker(broker_name)
            self.changes.brokers_changed(broker_name)

    def new_broker_data(self, cluster, broker_name):
        broker_data = self.broker_addr_table[broker_name] = BrokerData(cluster, broker_name, {})
        self.mark_broker(broker_name)
        self.changes.brokers_changed(broker_name)
        topics = self.topics_of(broker_name)
        if topics:   # QueueData that waited for their BrokerData: those routes show it now
            self.changes.broker_routes_changed(topics)
        return broker_data

    def broker_data_changed(self, broker_name):
        """The BrokerData of ``broker_name`` was changed in place."""
        self.mark_broker(broker_name)
        self.changes.brokers_changed(broker_name)
        self.changes.broker_routes_changed(self.topics_of(broker_name))

    def remove_broker_name(self, broker_name):
        """Remove a broker name's BrokerData, its cluster memberships and its QueueData."""
        self._broker_marks.pop(broker_name, None)
        self.changes.broker_routes_changed(self.topics_of(broker_name))
        del self.broker_addr_table[broker_name]
        for cluster in [c for c, names in self.cluster_addr_table.items() if broker_name in names]:
            names = self.cluster_addr_table[cluster]
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster]
        self.changes.brokers_changed(broker_name)
        self.remove_broker_queue_datas(broker_name)

    @contextmanager
    def removals_together(self):
        """Inside (an operation): each broker name's QueueData removal waits, its topics touched at once
        (events name what they were before), then all go in one pass over the union of their topics. A
        switch dropping a thousand brokers' connections visits each of 100,000 topics once, not each of
        1,000,000 entries (memory-bound: 0.67 s, now a third of it)."""
        if self._waiting_removals is not None:
            yield
            return
        self._waiting_removals = []
        try:
            yield
        finally:
            names, self._waiting_removals = self._waiting_removals, None
            if names:
                self._remove_queue_datas_of(names)

    def _remove_queue_datas_of(self, names):
        table, gone = self.topic_queue_table, set(names)
        topics = set()
        for name in names:
            topics.update(self.broker_topics.pop(name, ()))
        emptied = False
        for topic in topics:
            qmap = table.get(topic)
            if qmap is None:
                continue
            if gone.issuperset(qmap):
                del table[topic]
                emptied = True
            else:
                for name in gone.intersection(qmap):
                    del qmap[name]
        for name in names:
            self.mark_broker(name)
        if emptied:
            self.changes.topic_set_changed()
        self.changes.queue_datas_changed(topics)

    def remove_broker_queue_datas(self, broker_name):
        """Remove every QueueData of ``broker_name`` in one pass (a broker leaving takes thousands of
        topics with it: one notification for all, not one per topic). Inside an operation."""
        table, changes = self.topic_queue_table, self.changes
        if self._waiting_removals is not None:
            topics = self.broker_topics.get(broker_name)
            if topics:
                changes.touch_many(topics, table)
                self._waiting_removals.append(broker_name)
            return
        topics = self.broker_topics.pop(broker_name, None)
        if not topics:
            return
        changes.touch_many(topics, table)
        emptied = False
        for topic in topics:
            qmap = table.get(topic)
            if qmap is not None and qmap.pop(broker_name, None) is not None and not qmap:
                del table[topic]
                emptied = True
        self.mark_broker(broker_name)
        if emptied:
            changes.topic_set_changed()
        changes.queue_datas_changed(topics)

    # -- QueueData ----------------------------------------------------------------------------
    def put_queue_data(self, topic, queue_data):
        topic = intern(topic)
        queue_data = shared_queue_data(queue_data)
        qmap = self.topic_queue_table.get(topic)
        name = queue_data.broker_name
        if qmap is None:
            self.changes.touch(topic, None)
            qmap = self.topic_queue_table[topic] = {}
            self.changes.topic_set_changed()
        old = qmap.get(name)
        if old is None:
            self.changes.touch(topic, qmap)
            qmap[name] = queue_data
            self.broker_topics.setdefault(name, set()).add(topic)
            self.mark_broker(name)
        elif old != queue_data:
            qmap[name] = queue_data
        else:
            return
        self.changes.queue_datas_changed((topic,))

    def put_broker_topics(self, broker_name, topic_configs, perm_mask=-1, only_missing=False):
        """``put_queue_data`` for many topics of one broker: {topic: TopicConfig}, perm & ``perm_mask``;
        with ``only_missing``, only topics the broker has no QueueData in yet.

        The same bookkeeping (route cache, trackers, reverse index, touched topics, one change
        notification), done once per call where it can be: a first registration of 10,000
        topics spends its time here.
        """
        if not topic_configs:
            return
        changes = self.changes
        if changes.touched is None:
            with changes.operation(self):
                return self.put_broker_topics(broker_name, topic_configs, perm_mask, only_missing)
        table = self.topic_queue_table
        touched = changes.touched
        broker_name = intern(broker_name)
        mine = self.broker_topics.get(broker_name)
        if mine is None:
            mine = self.broker_topics[broker_name] = set()
        topics = list(map(intern, topic_configs))
        queue_datas = bulk.queue_datas(broker_name, topic_configs.values(), perm_mask)
        if bulk.none_known(table, topics):
            # Topics nobody has yet (a broker's first registration): the same bookkeeping as the
            # loop below, in bulk, in the same order.
            created = [{broker_name: queue_data} for queue_data in queue_datas]
            if touched:
                touched.update(dict.fromkeys(filterfalse(touched.__contains__, topics), ()))
            else:   # the operation's first change: its end can name the change without a scan
                changes.created_alone(broker_name, topics, created)
            table.update(zip(topics, created))
            mine.update(topics)
            self.broker_topics[broker_name] = compacted(mine)
            self.mark_broker(broker_name)
            changes.topic_set_changed()
            changes.queue_datas_changed(topics)
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
            self.broker_topics[broker_name] = compacted(mine)
            self.mark_broker(broker_name)
        if new_topic:
            changes.topic_set_changed()
        changes.queue_datas_changed(changed)

    def remove_queue_data(self, topic, broker_name):
        qmap = self.topic_queue_table.get(topic)
        if not qmap or broker_name not in qmap:
            return
        self.changes.touch(topic, qmap)
        del qmap[broker_name]
        self._forget_topic_of(broker_name, topic)
        if not qmap:
            del self.topic_queue_table[topic]
            self.changes.topic_set_changed()
        self.changes.queue_datas_changed((topic,))

    def remove_topic(self, topic):
        qmap = self.topic_queue_table.get(topic)
        if qmap is None:
            return
        self.changes.touch(topic, qmap)
        for name in qmap:
            self._forget_topic_of(name, topic)
        del self.topic_queue_table[topic]
        self.changes.topic_set_changed()
        self.changes.queue_datas_changed((topic,))

    def _forget_topic_of(self, broker_name, topic):
        self.mark_broker(broker_name)
        topics = self.broker_topics.get(broker_name)
        if topics is not None:
            topics.discard(topic)
            if not topics:
                del self.broker_topics[broker_name]

    def set_perm(self, topic, broker_name, perm):
        qmap = self.topic_queue_table[topic]
        old = qmap[broker_name]
        if old.perm != perm:   # stored QueueData are shared: replaced, never changed in place
            qmap[broker_name] = shared_queue_data(QueueData(old.broker_name, old.read_queue_nums,
                                                            old.write_queue_nums, perm, old.topic_sys_flag))
            self.changes.queue_datas_changed((topic,))

    def put_mappings(self, mappings):
        """Store static-topic mapping infos ({topic: info}), each under its ``bname``."""
        table = self.topic_queue_mapping_info_table
        for topic, info in mappings.items():
            by_broker = table.setdefault(topic, {})
            if by_broker.get(info["bname"]) != info:
                by_broker[info["bname"]] = info
                self.changes.queue_datas_changed((topic,))

    # -- live entries and filter servers ------------------------------------------------------
    def bind_live(self, key, live):
        """Make ``live`` the live entry of ``key`` (cluster, brokerAddr), replacing any other."""
        old = self.broker_live_table.get(key)
        if old is not None and old.connection is not None:
            self._unbind_connection(old.connection, key)
        self.broker_live_table[key] = live
        if live.connection is not None:
            self.by_connection.setdefault(live.connection, set()).add(key)
        self.deadlines.push(key, live)

    def _unbind_connection(self, connection, key):
        keys = self.by_connection.get(connection)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.by_connection[connection]

    def drop_live(self, key):
        """Remove the live entry of ``key`` and its filter servers; returns it (or None)."""
        live = self.broker_live_table.pop(key, None)
        if live is not None and live.connection is not None:
            self._unbind_connection(live.connection, key)
        if key in self.filter_server_table:
            self.set_filter_servers(key, [])
        return live

    def set_filter_servers(self, key, servers):
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
                self.changes.broker_routes_changed(self.topics_of(broker_data.broker_name))


def _shape_templates(shapes):
    """One map brokerName -> shared QueueData per shape of ``rows.topic_shapes`` (trusted as to shape)."""
    queue_datas = [shared_queue_data(QueueData(*row)) for row in shapes["queueDatas"]]
    return [{queue_datas[i].broker_name: queue_datas[i] for i in indexes} for indexes in shapes["shapes"]]


def _tables_from_shapes(shapes, queue_maps=None):
    """(topic_queue_table, broker_topics) from ``rows.topic_shapes``: each topic gets a copy of its shape's
    map (the shared one, given ``queue_maps``), and each broker name's topic set is filled per shape."""
    templates = _shape_templates(shapes)
    if queue_maps is not None:
        templates = [queue_maps.share(template) for template in templates]
    table, by_shape = {}, {}
    for topic, shape in shapes["topics"].items():
        if shape is not None:
            topic = intern(topic)
            table[topic] = templates[shape] if queue_maps is not None else templates[shape].copy()
            by_shape.setdefault(shape, []).append(topic)
    broker_topics = {}
    for shape, topics in by_shape.items():
        for broker_name in templates[shape]:
            names = broker_topics.get(broker_name)
            if names is None:
                broker_topics[broker_name] = set(topics)
            else:
                names.update(topics)
    return table, {name: compacted(names) for name, names in broker_topics.items()}


def _queue_data_map(rows):
    """brokerName -> shared QueueData, keyed by the shared object's own name: a decoded row's name is a
    string of its own, which every topic's map would otherwise keep."""
    shared = [shared_queue_data(QueueData(*row)) for row in rows or ()]
    return {queue_data.broker_name: queue_data for queue_data in shared}


_EMPTY_SET_BYTES = getsizeof(set())
#: bytes per slot of a set's table (hash and pointer)
_SET_SLOT_BYTES = 16


def compacted(names):
    """``names``, or a copy of it if the copy's table is smaller.

    A set that grows by additions quadruples its table each time it fills (below 50,000 members), so
    a broker's 2,000 topics added from a list sit in 8,192 slots; a copy is sized for its members at
    once (the next power of two above twice their number: 4,096).
    """
    slots = 8
    while slots <= 2 * len(names):
        slots <<= 1
    if getsizeof(names) > _EMPTY_SET_BYTES + _SET_SLOT_BYTES * slots:
        return set(names)
    return names
