"""The route tables and the indexes kept beside them, with the changes every algorithm is made of.

Each change is reported to the change tracker (``changes``, a RouteChanges), which drops
the cached bodies built from what changed and tells the followers; callers group changes
into operations (``changes.operation(tables)``). Registration, expiry, admin operations
and restores are written in terms of the calls below.

Tables (public for reading, never mutate them from outside): ``topic_queue_table`` topic ->
QueueMap (a read-only {brokerName: QueueData}, one per distinct set of QueueData, shared by every
topic that has it: queuemaps.py); ``broker_addr_table`` brokerName -> BrokerData;
``cluster_addr_table`` cluster -> set(brokerName); ``broker_live_table`` (cluster,
brokerAddr) -> BrokerLiveInfo; ``filter_server_table`` (cluster, brokerAddr) -> [addr];
``topic_queue_mapping_info_table`` topic -> {brokerName: mapping info dict}. Indexes:
``queue_maps`` the interned maps, each with the set of its topics, and brokerName -> the maps holding
it (``topics_of`` is their union); ``by_connection`` connection -> set((cluster, brokerAddr)) bound to
it; ``deadlines`` the live entries by deadline (liveness.py).

Every change of QueueData is a move of topics from one map to another (``_plan``, ``_apply``): a
broker's registration of 4,000 topics that 3,000 have already on three other brokers is a handful of
moves (one per distinct map those topics had), each a set difference and a dict update in C, or none
when all the topics of a map move to a map nobody has yet (the map itself takes the new QueueData,
``QueueMaps.become``); a broker leaving moves whole maps' topic sets. Memory at a million topics on four
brokers each: no dict per topic (queuemaps.py says why) and no set per broker (one entry per topic and broker:
4,000,000) but one entry per topic in its map's set; a topic name is one string, shared by the table and
its map's set (a name moving between maps keeps the object it was first stored with).
"""

from __future__ import annotations

from collections import Counter, deque
from contextlib import contextmanager
from itertools import chain, compress, repeat
from operator import is_
from sys import intern
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Iterator, Mapping, Optional, Sequence

from namesrv.routes import bulk
from namesrv.routes.liveness import DeadlineQueue
from namesrv.routes.model import (
    BrokerData, BrokerLiveInfo, DataVersion, LiveKey, MappingInfo, QueueData, TopicSettings, shared_queue_data)
from namesrv.routes.queuemaps import QueueMap, QueueMaps

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IRemotingConnection
    from namesrv.routes.changes import RouteChanges
    from namesrv.routes.rows import Row, TopicShapes

#: one step of a change of QueueData: (the topics, the map they leave or None, the map they join or None)
Move = tuple[Collection[str], Optional[QueueMap], Optional[QueueMap]]
#: (a map or None: the topics go, [topic, ...]) of ``_set_maps``
Target = tuple[Optional[QueueMap], list[str]]

#: what ``adopt`` takes over: the six tables and the indexes kept beside them
STATE = ("topic_queue_table", "broker_addr_table", "cluster_addr_table", "broker_live_table",
         "filter_server_table", "topic_queue_mapping_info_table", "queue_maps", "by_connection", "deadlines")
#: a part of a map's topics moves as the map's topics minus those that stay (the stored strings, no
#: new one per name) when it is at least this share of them
_WHOLE_SHARE = 8


class RouteTables:
    def __init__(self, changes: RouteChanges, share_queue_maps: bool = True) -> None:
        """``share_queue_maps``: kept for callers that asked for shared maps; every table shares them now."""
        self.changes = changes
        self.epoch = 0           # renewed by every reset (see registration_token)
        self._mark_counter = 0
        self._batches = 0        # numbers the batches of moves (changes.moved)
        self.reset()

    _waiting_removals: Optional[list[str]] = None   # inside ``removals_together``: broker names whose QueueData wait

    def reset(self) -> None:
        """Empty tables; the followers hear that everything changed."""
        self.topic_queue_table: dict[str, QueueMap] = {}
        self.queue_maps = QueueMaps()
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[LiveKey, BrokerLiveInfo] = {}
        self.filter_server_table: dict[LiveKey, list[str]] = {}
        self.topic_queue_mapping_info_table: dict[str, dict[str, MappingInfo]] = {}
        self.by_connection: dict[IRemotingConnection, set[LiveKey]] = {}
        self.deadlines: DeadlineQueue[LiveKey, BrokerLiveInfo] = DeadlineQueue()
        # brokerName -> a number never used before, renewed whenever its BrokerData, cluster
        # membership or set of topics changes (see registration_token); a reset renews the epoch
        self._broker_marks: dict[str, int] = {}
        self.epoch += 1
        self.changes.everything_changed()

    def adopt(self, other: RouteTables) -> None:
        """Take over every table (and its indexes) of ``other``, RouteTables built and checked apart (a
        snapshot being restored): all or nothing. The followers hear that everything changed."""
        self.reset()
        for name in STATE:
            setattr(self, name, getattr(other, name))
        self.changes.topic_set_changed()
        self.changes.brokers_changed()

    @property
    def broker_topics(self) -> dict[str, set[str]]:
        """brokerName -> set(topic) having its QueueData: a copy, built from the maps (tests, checks)."""
        return {name: set().union(*(qmap.topics for qmap in held.values()))
                for name, held in self.queue_maps.by_broker.items()}

    def replace_from_rows(self, topics: Optional[Mapping[str, Optional[list[Row]]]] = None,
                          mappings: Optional[Mapping[str, dict[str, MappingInfo]]] = None,
                          brokers: Optional[Iterable[Row]] = None,
                          clusters: Optional[Mapping[str, Iterable[str]]] = None,
                          filters: Optional[Iterable[Row]] = None, live: Optional[Iterable[Row]] = None,
                          now: Optional[float] = None, shapes: Optional[TopicShapes] = None) -> None:
        """Replace the tables given as rows of ``rows.py`` (trusted as to shape: a snapshot checks its
        values first); a table not given is kept. Snapshots restore through this call with every table,
        a replica can refresh its broker-level tables with it.

        ``live`` entries get ``last_update`` = ``now`` and no connection. The indexes of what is
        replaced are rebuilt, registration tokens are renewed and the followers hear that
        everything changed. ``shapes`` (``rows.topic_shapes``) replaces the topics as ``topics`` does.
        """
        if topics is not None:
            self.topic_queue_table, self.queue_maps = {}, QueueMaps()
            self.apply_topic_rows(topics, report=False)
        if shapes is not None:
            self.topic_queue_table, self.queue_maps = _tables_from_shapes(shapes)
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
            assert now is not None   # live entries are given with the time they are restored at
            self.broker_live_table, self.by_connection, self.deadlines = {}, {}, DeadlineQueue()
            for cluster, addr, name, broker_id, ha, timeout, (timestamp, counter, state) in live:
                self.bind_live((cluster, addr), BrokerLiveInfo(now, timeout, DataVersion(timestamp, counter, state),
                                                               None, ha, name, broker_id))
        self._broker_marks = {}
        self.epoch += 1
        self.changes.everything_changed()

    def update_broker_rows(self, brokers: Iterable[Row], clusters: Optional[Mapping[str, Iterable[str]]],
                           filters: Iterable[Row], gone: Optional[Iterable[str]] = None,
                           memberships: Optional[Iterable[tuple[str, Collection[str]]]] = None) -> None:
        """Bring the broker-level tables to these rows (a replica's publication, after its topics),
        telling the change tracker only what differs: the kept bodies of every topic whose brokers
        did not change stay (``replace_from_rows`` would drop them all, and a read worker would
        join 100,000 routes again after any change). With ``gone`` (a list, maybe empty), ``brokers``
        are only the rows of the brokers that changed, ``gone`` the names of those removed; the other
        BrokerData stay as they are. ``memberships`` ([[brokerName, [cluster, ...]], ...]) instead of
        ``clusters`` (every cluster's names): the clusters of those brokers only, the others' stay."""
        changes, old_table = self.changes, self.broker_addr_table
        table, changed = ({}, []) if gone is None else (dict(old_table), list(gone))
        for name, cluster, zone, acting, addrs in brokers:
            broker_data = BrokerData(cluster, name, {broker_id: addr for broker_id, addr in addrs}, zone, bool(acting))
            old = old_table.get(name)
            table[name] = old if old == broker_data else broker_data
            if old != broker_data:
                changed.append(name)
        if gone is None:
            changed.extend(name for name in old_table if name not in table)
        else:
            for name in gone:
                table.pop(name, None)
        if memberships is not None:
            joined, cluster_table = self._move_memberships(memberships), self.cluster_addr_table
        else:
            assert clusters is not None   # given whenever memberships are not
            cluster_table = {cluster: set(names) for cluster, names in clusters.items()}
            members = {(cluster, name) for cluster, names in cluster_table.items() for name in names}
            members ^= {(cluster, name) for cluster, names in self.cluster_addr_table.items() for name in names}
            joined = [name for _, name in members]
        filter_table = {(cluster, addr): list(servers) for cluster, addr, servers in filters}
        moved = {key for key in filter_table.keys() | self.filter_server_table.keys()
                 if filter_table.get(key) != self.filter_server_table.get(key)}
        self.broker_addr_table, self.cluster_addr_table, self.filter_server_table = table, cluster_table, filter_table
        served = {addr for _, addr in moved}
        filtered = [broker_data.broker_name for broker_data in table.values()
                    if served.intersection(broker_data.broker_addrs.values())] if served else []
        changes.begin()
        touched = set(changed).union(joined, filtered)
        for name in touched:
            self.mark_broker(name)
            changes.brokers_changed(name)
        if touched:
            changes.routes_of_brokers_changed([topics for name in touched for topics in self.topic_sets_of(name)])
        changes.end()

    def _move_memberships(self, memberships: Iterable[tuple[str, Collection[str]]]) -> list[str]:
        """Put each broker name of ``memberships`` in exactly the clusters listed with it, in place (a cluster's
        thousand names are not copied); returns the names whose membership changed."""
        moved: list[str]
        names: Optional[set[str]]
        clusters, moved = self.cluster_addr_table, []
        for name, now in memberships:
            before = len(moved)
            for cluster in [c for c, names in clusters.items() if name in names and c not in now]:
                names = clusters[cluster]
                names.discard(name)
                if not names:
                    del clusters[cluster]
                moved.append(name)
            for cluster in now:
                names = clusters.get(cluster)
                if names is None:
                    names = clusters[cluster] = set()
                if name not in names:
                    names.add(name)
                    if len(moved) == before:
                        moved.append(name)
        return moved

    def apply_topic_rows(self, topics: Mapping[str, Optional[list[Row]]],
                         mappings: Optional[Mapping[str, Optional[dict[str, MappingInfo]]]] = None,
                         report: bool = True) -> None:
        """Set the QueueData of each topic of ``topics`` ({topic: queue_data_rows, or None: the topic is
        gone}) and, if given, its static-topic mappings ({topic: {brokerName: info}, or None}): a replica's
        part of the changed topics. The reverse index follows; ``report`` tells the change tracker."""
        maps = self.queue_maps
        targets = {topic: maps.get(_queue_datas(queue_datas)) for topic, queue_datas in topics.items()}
        self._set_maps(_by_value(targets), mappings, report)

    def apply_topic_shapes(self, shapes: TopicShapes,
                           mappings: Optional[Mapping[str, Optional[dict[str, MappingInfo]]]] = None,
                           report: bool = True) -> None:
        """``apply_topic_rows`` with the topics as ``rows.topic_shapes`` (one map per shape)."""
        templates = _shape_maps(shapes, self.queue_maps)
        targets: list[Target]
        if "groups" in shapes:   # a shape at a time: no look at each topic
            targets = [(templates[shape], names) for shape, names in enumerate(shapes["groups"]) if names]
            if shapes["gone"]:
                targets.append((None, shapes["gone"]))
        else:
            by_index: dict[Optional[int], Optional[QueueMap]] = dict(enumerate(templates))
            by_index[None] = None
            by_topic = shapes["topics"]
            targets = _by_value(dict(zip(by_topic, map(by_index.__getitem__, by_topic.values()))))
        self._set_maps(targets, mappings, report)

    def _set_maps(self, targets: list[Target], mappings: Optional[Mapping[str, Optional[dict[str, MappingInfo]]]],
                  report: bool) -> None:
        """Give the topics of each (map, [topic, ...]) of ``targets`` that map (interned; None: they go), then
        set the static-topic mappings. Moves are planned per target map, in C."""
        moves: list[Move] = []
        for target, names in targets:
            def to_target(old: Optional[QueueMap], target: Optional[QueueMap] = target) -> Optional[QueueMap]:
                return target
            moves.extend(self._plan(names, None, to_target))
        self.changes.begin()   # one notification for the part
        try:
            self._apply(moves, report)
            self._set_mappings(targets, mappings, report)
        finally:
            self.changes.end()

    def _set_mappings(self, targets: list[Target],
                      mappings: Optional[Mapping[str, Optional[dict[str, MappingInfo]]]], report: bool) -> None:
        mapping_table = self.topic_queue_mapping_info_table
        for topic, by_broker in (mappings or {}).items():
            if by_broker is None:
                mapping_table.pop(topic, None)
            else:
                mapping_table[topic] = by_broker
        if report and mappings:   # those whose QueueData moved are reported already; again is harmless
            self.changes.queue_datas_changed(list(mappings))

    # -- the registration shortcut's token ------------------------------------------------
    def mark_broker(self, broker_name: str) -> None:
        self._mark_counter += 1
        self._broker_marks[broker_name] = self._mark_counter

    def registration_token(self, broker_name: str) -> tuple[int, Optional[int]]:
        """Equal for two moments only if nothing that re-applying a registration of ``broker_name``
        could change has changed in between: its BrokerData (addresses, acting master, zone),
        its cluster membership, the set of topics it has QueueData in, or the whole tables.

        Everything else a registration writes is either its own (live entry, filter servers;
        gone with the live entry) or written only when its DataVersion changes (QueueData of
        topics it still has, static-topic mappings), which an identical body does not.
        """
        return self.epoch, self._broker_marks.get(broker_name)

    def topics_of(self, broker_name: str) -> Collection[str]:
        """The topics with QueueData of ``broker_name``: a set (do not change it; it may be a map's own),
        or () for none."""
        held = self.queue_maps.by_broker.get(broker_name)
        if not held:
            return ()
        if len(held) == 1:
            for qmap in held.values():
                return qmap.topics
        return set().union(*(qmap.topics for qmap in held.values()))

    def topic_sets_of(self, broker_name: str) -> list[set[str]]:
        """The topic sets of the maps holding ``broker_name``: its topics without a union of them (a thousand
        brokers leaving at once would build a million-name set each)."""
        return [qmap.topics for qmap in self.queue_maps.by_broker.get(broker_name, {}).values()]

    def topic_count_of(self, broker_name: str) -> int:
        """How many topics have QueueData of ``broker_name`` (no set is built)."""
        return sum(len(qmap.topics) for qmap in self.queue_maps.by_broker.get(broker_name, {}).values())

    # -- moves: every change of QueueData ---------------------------------------------------
    def _plan(self, names: list[str], olds: Optional[list[Optional[QueueMap]]],
              target: Callable[[Optional[QueueMap]], Optional[QueueMap]]) -> list[Move]:
        """The moves that give each topic of ``names`` (distinct; their maps are ``olds``, None where there is
        none; ``olds`` None: looked up here) the map ``target(old)`` (None: the topic goes; ``old``: it stays),
        as [(topics, old, new)].

        One step per distinct current map, in C: the topics that have ``old`` are all of its topics (its
        own set moves), or its topics minus those that stay (the stored strings), or, for a few of many,
        the names given. Without ``olds``, the maps whose topics are all named come first, found without a
        look-up per topic (bulk.whole_maps)."""
        moves: list[Move] = []
        topics: Collection[str]
        old: Optional[QueueMap]
        if olds is None:
            whole, names = bulk.whole_maps(self.topic_queue_table, names)
            for old in whole:
                new = target(old)
                if new is not old:
                    moves.append((old.topics, old, new))
            olds = list(map(self.topic_queue_table.get, names))
        wanted = None
        going = None
        for old, count in Counter(olds).items():   # maps are hashable by identity (queuemaps.QueueMap)
            new = target(old)
            if new is old:
                continue
            if old is None:
                topics = list(compress(names, map(is_, olds, repeat(None))))
            elif new is None and count != len(old.topics):
                # a few of a map's topics go: the names given (none of them is stored again), grouped by map in
                # one pass, not a pass over each map (a mass disconnect: 100,000 topics going a few per map)
                if going is None:
                    going = _names_by_map(names, olds)
                topics = going[old]
            else:
                if wanted is None and count != len(old.topics):
                    wanted = set(names)
                topics = _moving(old.topics, count, wanted)
            moves.append((topics, old, new))
        return moves

    def _apply(self, moves: list[Move], report: bool = True) -> None:
        """Carry out ``_plan``'s moves: every topic leaves its map first, then joins its new one (a map may
        be one move's new and another's old), then maps left without topics go. Reported as one batch
        (``changes.moved``); the brokers whose set of topics changed get a new registration token."""
        if not moves:
            return
        table, maps, changes = self.topic_queue_table, self.queue_maps, self.changes
        changes.begin()   # one notification for the batch
        try:
            self._apply_moves(moves, report)
        finally:
            changes.end()

    def _apply_moves(self, moves: list[Move], report: bool) -> None:
        table, maps, changes = self.topic_queue_table, self.queue_maps, self.changes
        self._batches += 1
        batch = self._batches
        appeared = gone = False
        marked = set()
        detached = []
        going: list[Collection[str]] = []      # topics that go (new None), a collection per map they leave
        left: list[QueueMap] = []              # ...and those maps
        targets = Counter(id(new) for _, _, new in moves)
        for topics, old, new in moves:
            if report:
                changes.moved(topics, old, new, batch)
            if new is None and old is not None:
                # a topic going is the common move of a mass disconnect (100,000 topics, a few per map): the least
                # work per move here, the rest once for all of them below
                _leave(old, topics)
                going.append(topics)
                left.append(old)
                continue
            if old is None:
                appeared = True
                olds_names: Iterable[str] = ()
            else:
                olds_names = old.keys()
                if topics is old.topics and new is not None and not new.topics and targets[id(new)] == 1 \
                        and id(old) not in targets:
                    # every topic of ``old`` goes to a map no topic has yet (and none comes to ``old``): ``old``
                    # becomes that map, its topics keep their entry (a registration's topics already on its
                    # neighbours: no dict update per topic)
                    marked.update(olds_names ^ new.keys())
                    maps.become(old, new)
                    continue
                _leave(old, topics)
            if new is None:
                gone = True
                marked.update(olds_names)
            else:
                marked.update(olds_names ^ new.keys())
            detached.append((topics, old, new))
        if going:
            gone = True
            deque(map(table.__delitem__, chain.from_iterable(going)), 0)
            marked.update(*[old.keys() for old in left])
        for topics, old, new in detached:
            if new is None:
                deque(map(table.__delitem__, topics), 0)
                continue
            table.update(dict.fromkeys(topics, new))
            if not new.topics and type(topics) is set:
                new.topics = topics
            else:
                new.topics.update(topics)
        for topics, old, new in detached:
            if old is not None and not old.topics:
                maps.release(old)
        for old in left:
            if not old.topics:
                maps.release(old)
        for name in marked:
            self.mark_broker(name)
        if report:
            if appeared or gone:
                changes.topic_set_changed()
            for topics, old, new in moves:
                if new is not None or old is None:
                    changes.queue_datas_changed(topics)
            if going:
                changes.queue_datas_changed(list(chain.from_iterable(going)))

    def _move_topic(self, topic: str, new: Optional[QueueMap]) -> None:
        """One topic to ``new`` (its map now; None: the topic goes)."""
        old = self.topic_queue_table.get(topic)
        if new is not old:
            self._apply([([topic], old, new)])

    # -- brokers and clusters ---------------------------------------------------------------
    def add_to_cluster(self, cluster: str, broker_name: str) -> None:
        names = self.cluster_addr_table.get(cluster)
        if names is None:
            names = self.cluster_addr_table[cluster] = set()
        if broker_name not in names:
            names.add(broker_name)
            self.mark_broker(broker_name)
            self.changes.brokers_changed(broker_name)

    def new_broker_data(self, cluster: str, broker_name: str) -> BrokerData:
        broker_data = self.broker_addr_table[broker_name] = BrokerData(cluster, broker_name, {})
        self.mark_broker(broker_name)
        self.changes.brokers_changed(broker_name)
        topic_sets = self.topic_sets_of(broker_name)
        if topic_sets:   # QueueData that waited for their BrokerData: those routes show it now
            self.changes.broker_topic_sets_changed(topic_sets)
        return broker_data

    def broker_data_changed(self, broker_name: str) -> None:
        """The BrokerData of ``broker_name`` was changed in place."""
        self.mark_broker(broker_name)
        self.changes.brokers_changed(broker_name)
        self.changes.broker_topic_sets_changed(self.topic_sets_of(broker_name))

    def remove_broker_name(self, broker_name: str) -> None:
        """Remove a broker name's BrokerData, its cluster memberships and its QueueData."""
        self._broker_marks.pop(broker_name, None)
        self.changes.broker_topic_sets_changed(self.topic_sets_of(broker_name))
        del self.broker_addr_table[broker_name]
        for cluster in [c for c, names in self.cluster_addr_table.items() if broker_name in names]:
            names = self.cluster_addr_table[cluster]
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster]
        self.changes.brokers_changed(broker_name)
        self.remove_broker_queue_datas(broker_name)

    @contextmanager
    def removals_together(self) -> Iterator[None]:
        """Inside (an operation): each broker name's QueueData removal waits, then all go in one batch of
        moves, one per map holding any of them: a switch dropping a thousand brokers' connections moves
        each map's topics once (a dict update in C per map), not each of 4,000,000 entries."""
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

    def _remove_queue_datas_of(self, names: list[str]) -> None:
        maps, gone = self.queue_maps, set(names)
        affected = {}
        for name in gone:
            affected.update(maps.by_broker.get(name, {}))
        self._apply([(qmap.topics, qmap, maps.without(qmap, gone)) for qmap in affected.values()])
        for name in names:
            self.mark_broker(name)

    def remove_broker_queue_datas(self, broker_name: str) -> None:
        """Remove every QueueData of ``broker_name`` in one batch (a broker leaving takes thousands of
        topics with it: a move per map holding it). Inside an operation."""
        if self._waiting_removals is not None:
            if broker_name in self.queue_maps.by_broker:
                self._waiting_removals.append(broker_name)
            return
        self._remove_queue_datas_of([broker_name])

    # -- QueueData ----------------------------------------------------------------------------
    def put_queue_data(self, topic: str, queue_data: QueueData) -> None:
        old = self.topic_queue_table.get(topic)
        self._move_topic(topic, self.queue_maps.with_queue_data(old, shared_queue_data(queue_data)))

    def put_broker_topics(self, broker_name: str, topic_configs: Mapping[str, TopicSettings], perm_mask: int = -1,
                          only_missing: bool = False) -> None:
        """``put_queue_data`` for many topics of one broker: {topic: TopicConfig}, perm & ``perm_mask``;
        with ``only_missing``, only topics the broker has no QueueData in yet.

        A first registration of 4,000 topics is a move per distinct (map, QueueData) its topics had
        (``_plan``): a few, whatever the number of topics; a re-registration with the same queues moves
        nothing. The only per-topic Python code is the grouping of topics by QueueData when a broker's
        topics have different queue settings.
        """
        if not topic_configs:
            return
        changes = self.changes
        if not changes.in_operation:
            with changes.operation(self):
                return self.put_broker_topics(broker_name, topic_configs, perm_mask, only_missing)
        broker_name = intern(broker_name)
        names = list(topic_configs)
        shared = bulk.uniform_queue_data(broker_name, list(topic_configs.values()), perm_mask)
        groups: Sequence[tuple[QueueData, list[str], Optional[list[Optional[QueueMap]]]]]
        if shared is not None:   # the topics' maps are found by _plan (whole maps first)
            groups = [(shared, names, None)]
        else:
            groups = bulk.by_queue_data(list(bulk.queue_datas(broker_name, topic_configs.values(), perm_mask)),
                                        names, list(map(self.topic_queue_table.get, names)))
        with_queue_data = self.queue_maps.with_queue_data
        moves = []
        for queue_data, group_names, group_olds in groups:
            if only_missing:
                def target(old: Optional[QueueMap], queue_data: QueueData = queue_data) -> Optional[QueueMap]:
                    return old if old is not None and broker_name in old else with_queue_data(old, queue_data)
            else:
                def target(old: Optional[QueueMap], queue_data: QueueData = queue_data) -> Optional[QueueMap]:
                    return with_queue_data(old, queue_data)
            moves.extend(self._plan(group_names, group_olds, target))
        self._apply(moves)

    def remove_queue_data(self, topic: str, broker_name: str) -> None:
        qmap = self.topic_queue_table.get(topic)
        if not qmap or broker_name not in qmap:
            return
        self._move_topic(topic, self.queue_maps.without(qmap, {broker_name}))

    def remove_topic(self, topic: str) -> None:
        if topic in self.topic_queue_table:
            self._move_topic(topic, None)

    def set_perm(self, topic: str, broker_name: str, perm: int) -> None:
        qmap = self.topic_queue_table[topic]
        old = qmap[broker_name]
        if old.perm != perm:   # stored QueueData are shared: replaced, never changed in place
            self._move_topic(topic, self.queue_maps.with_queue_data(qmap, _with_perm(old, perm)))

    def set_perms(self, broker_name: str, new_perm: Callable[[int], int]) -> int:
        """Set the perm of every QueueData of ``broker_name`` to ``new_perm(perm)``: a move per map holding
        it. Returns how many topics it has."""
        maps = self.queue_maps
        held = list(maps.by_broker.get(broker_name, {}).values())
        moves: list[Move] = []
        for qmap in held:
            old = qmap[broker_name]
            perm = new_perm(old.perm)
            if perm != old.perm:
                moves.append((qmap.topics, qmap, maps.with_queue_data(qmap, _with_perm(old, perm))))
        count = sum(len(qmap.topics) for qmap in held)
        self._apply(moves)
        return count

    def put_mappings(self, mappings: Mapping[str, MappingInfo]) -> None:
        """Store static-topic mapping infos ({topic: info}), each under its ``bname``."""
        table = self.topic_queue_mapping_info_table
        for topic, info in mappings.items():
            by_broker = table.setdefault(topic, {})
            if by_broker.get(info["bname"]) != info:
                by_broker[info["bname"]] = info
                self.changes.queue_datas_changed((topic,))

    # -- live entries and filter servers ------------------------------------------------------
    def bind_live(self, key: LiveKey, live: BrokerLiveInfo) -> None:
        """Make ``live`` the live entry of ``key`` (cluster, brokerAddr), replacing any other."""
        old = self.broker_live_table.get(key)
        if old is not None and old.connection is not None:
            self._unbind_connection(old.connection, key)
        self.broker_live_table[key] = live
        if live.connection is not None:
            self.by_connection.setdefault(live.connection, set()).add(key)
        self.deadlines.push(key, live)

    def _unbind_connection(self, connection: IRemotingConnection, key: LiveKey) -> None:
        keys = self.by_connection.get(connection)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.by_connection[connection]

    def drop_live(self, key: LiveKey) -> Optional[BrokerLiveInfo]:
        """Remove the live entry of ``key`` and its filter servers; returns it (or None)."""
        live = self.broker_live_table.pop(key, None)
        if live is not None and live.connection is not None:
            self._unbind_connection(live.connection, key)
        if key in self.filter_server_table:
            self.set_filter_servers(key, [])
        return live

    def set_filter_servers(self, key: LiveKey, servers: Iterable[str]) -> None:
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
                self.changes.broker_topic_sets_changed(self.topic_sets_of(broker_data.broker_name))


def _leave(old: QueueMap, topics: Collection[str]) -> None:
    """``topics`` leave ``old`` (all of them: its set is handed on whole)."""
    if topics is old.topics:
        old.topics = set()
    else:
        old.topics.difference_update(topics)


def _names_by_map(names: list[str], olds: list[Optional[QueueMap]]) -> dict[Optional[QueueMap], list[str]]:
    """``names`` grouped by their map (``olds``, aligned with them)."""
    grouped: dict[Optional[QueueMap], list[str]] = {}
    for name, old in zip(names, olds):
        named = grouped.get(old)
        if named is None:
            grouped[old] = [name]
        else:
            named.append(name)
    return grouped


def _moving(topics: set[str], count: int, wanted: Optional[set[str]]) -> set[str]:
    """Which of a map's ``topics`` move, ``count`` of them being among ``wanted`` (the names given): all of
    them (the set itself moves), or the set minus those that stay (the stored strings, no new ones), or for
    a few of many, those of ``wanted`` (a pass over the smaller set)."""
    if count == len(topics):
        return topics
    assert wanted is not None   # _plan names them when not all of a map's topics move
    if len(topics) <= _WHOLE_SHARE * count:
        return topics - (topics - wanted)
    return topics & wanted


def _with_perm(queue_data: QueueData, perm: int) -> QueueData:
    return shared_queue_data(QueueData(queue_data.broker_name, queue_data.read_queue_nums,
                                       queue_data.write_queue_nums, perm, queue_data.topic_sys_flag))


def _queue_datas(rows: Optional[list[Row]]) -> list[QueueData]:
    """The shared QueueData of rows (a decoded row's name is a string of its own, which the shared
    QueueData replaces with the one already stored)."""
    return [shared_queue_data(QueueData(*row)) for row in rows or ()]


def _shape_maps(shapes: TopicShapes, maps: QueueMaps) -> list[Optional[QueueMap]]:
    """The interned map of each shape of ``rows.topic_shapes`` (trusted as to shape), in ``maps``."""
    queue_datas = [shared_queue_data(QueueData(*row)) for row in shapes["queueDatas"]]
    return [maps.get([queue_datas[i] for i in indexes]) for indexes in shapes["shapes"]]


def _by_value(targets: Mapping[str, Optional[QueueMap]]) -> list[Target]:
    """[(value, [keys with it]), ...] of a dict whose values are few distinct objects (or None)."""
    groups: dict[int, Target] = {}
    for key, value in targets.items():
        group = groups.get(id(value))
        if group is None:
            groups[id(value)] = (value, [key])
        else:
            group[1].append(key)
    return list(groups.values())


def _tables_from_shapes(shapes: TopicShapes) -> tuple[dict[str, QueueMap], QueueMaps]:
    """(topic_queue_table, QueueMaps) from ``rows.topic_shapes``: each shape's map interned once, its topics
    set in C."""
    maps = QueueMaps()
    templates = _shape_maps(shapes, maps)
    by_shape: dict[int, list[str]] = {}
    for topic, shape in shapes.get("topics", {}).items():
        if shape is not None:
            names = by_shape.get(shape)
            if names is None:
                by_shape[shape] = [topic]
            else:
                names.append(topic)
    if "groups" in shapes:
        by_shape = dict(enumerate(shapes["groups"]))
    table: dict[str, QueueMap] = {}
    for shape, names in by_shape.items():
        qmap = templates[shape]
        assert qmap is not None   # a checked shape names at least one QueueData
        table.update(dict.fromkeys(names, qmap))
        qmap.topics.update(names)
    for qmap in list(maps):
        if not qmap.topics:
            maps.release(qmap)
    return table, maps
