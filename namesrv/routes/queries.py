"""Read-only questions to the route tables, answered from the body cache where they can be.

A route body is joined from the encoded pieces of its brokers (their BrokerData and
QueueData, kept in a RouteBodyCache, bodycache.py), so any of 100,000 topics costs a join,
not an encode. A route that needs more (acting master, a static-topic mapping, filter
servers) is encoded whole and kept per (standard JSON?, acting-master rewrite?,
orderTopicConf), dropped precisely when something it was built from changes: the topic's
QueueData or static-topic mapping, the BrokerData of one of its brokers, or the filter
servers of one of their addresses. A heartbeat that changes nothing drops nothing. Cluster info and the all-topics list are kept until a
broker or topic-set change (PITFALLS 7). The change tracker (changes.py) does the
dropping; queries only read and fill the cache.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Callable, Final, Literal, Optional, Union

from namesrv.routes import topiclists
from namesrv.routes.bodies import encode
from namesrv.routes.model import (
    MASTER_ID, PERM_WRITE, SYNC_BROKER_MEMBER_GROUP_PREFIX, BrokerData, MappingInfo, TopicRouteData)
from namesrv.routes.topiclists import Steps

if TYPE_CHECKING:   # types only
    from namesrv.routes.bodycache import RouteBodyCache
    from namesrv.routes.queuemaps import QueueMap
    from namesrv.routes.tables import RouteTables


class _NotJoined(enum.Enum):
    """``_NOT_JOINED``'s type: a one-member enum, so that the type checker tells it from a body."""

    NOT_JOINED = 0


_NOT_JOINED: Final = _NotJoined.NOT_JOINED


class RouteQueries:
    """Everything that reads ``tables`` (a RouteTables) without changing them; encoded answers are kept in
    ``body_cache`` (a RouteBodyCache), which the change tracker empties as the tables change."""

    def __init__(self, tables: RouteTables, body_cache: RouteBodyCache) -> None:
        self.tables = tables
        self.body_cache = body_cache

    # -- routes ------------------------------------------------------------------------
    def pickup_topic_route(self, topic: str, support_acting_master: bool = False) -> Optional[TopicRouteData]:
        """The route of ``topic`` as a TopicRouteData of copies, or None (TOPIC_NOT_EXIST).

        Arrays are sorted by broker name (Java's order is a HashMap's, i.e. arbitrary).
        """
        tables = self.tables
        queue_map = tables.topic_queue_table.get(topic)
        if not queue_map:
            return None
        broker_datas: list[BrokerData] = []
        filter_servers: dict[str, list[str]] = {}
        for broker_name in sorted(queue_map):
            broker_data = tables.broker_addr_table.get(broker_name)
            if broker_data is None:
                continue
            copy = broker_data.copy()
            broker_datas.append(copy)
            if tables.filter_server_table:
                for addr in copy.broker_addrs.values():
                    servers = tables.filter_server_table.get((copy.cluster, addr))
                    if servers is not None:
                        filter_servers[addr] = list(servers)
        if not broker_datas:
            return None
        queue_datas = [queue_map[name].copy() for name in sorted(queue_map)]
        mapping: Optional[dict[str, MappingInfo]] = tables.topic_queue_mapping_info_table.get(topic)
        if mapping is not None:
            mapping = {name: _copy_mapping(info) for name, info in mapping.items()}
        route = TopicRouteData(queue_datas, broker_datas, filter_servers, mapping)
        if support_acting_master:
            _apply_acting_master(topic, route)
        return route

    def joined_bodies(self, standard: object, support_acting_master: object) -> dict[str, bytes]:
        """{topic: its kept route body without order conf}, for this JSON style and acting-master setting:
        one dict for the tables' life, emptied in place (a topic's entry goes when its route changes)."""
        return self.body_cache.joined[bool(standard), bool(support_acting_master)]

    def route_body(self, topic: str, standard: object, order_topic_conf: Optional[str] = None,
                   support_acting_master: object = False) -> Optional[bytes]:
        """The encoded TopicRouteData answer for ``topic``, or None when there is no route.

        Joined from the pieces of its brokers when it can be (bodycache.py); else built, encoded
        and kept whole.
        """
        standard, support_acting_master = bool(standard), bool(support_acting_master)
        body: Union[bytes, None, Literal[_NotJoined.NOT_JOINED]]
        if order_topic_conf is None:
            body = self.body_cache.joined[standard, support_acting_master].get(topic)
            if body is not None:
                return body
        tables = self.tables
        queue_map = tables.topic_queue_table.get(topic)
        if not queue_map:
            return None
        body = self._joined_route_body(topic, queue_map, standard, order_topic_conf, support_acting_master)
        if body is not _NOT_JOINED:
            return body
        key = (standard, support_acting_master, order_topic_conf)
        variants = self.body_cache.routes.get(topic)
        if variants is not None:
            kept = variants.get(key)
            if kept is not None:
                return kept
        route = self.pickup_topic_route(topic, support_acting_master)
        if route is None:
            return None
        route.order_topic_conf = order_topic_conf
        encoded = encode.encode_topic_route(route, standard)
        self.body_cache.remember_route(topic, key, encoded)
        return encoded

    def _joined_route_body(self, topic: str, queue_map: QueueMap, standard: bool, order_topic_conf: Optional[str],
                           support_acting_master: bool) -> Union[bytes, None, Literal[_NotJoined.NOT_JOINED]]:
        """The route joined from cached pieces, None (no route), or _NOT_JOINED when it needs more than
        a join: a static-topic mapping, filter servers, or a masterless group that acting master rewrites."""
        tables = self.tables
        if tables.topic_queue_mapping_info_table and topic in tables.topic_queue_mapping_info_table:
            return _NOT_JOINED
        cache = self.body_cache
        broker_table = tables.broker_addr_table
        filters = tables.filter_server_table
        names = sorted(queue_map)
        broker_pieces = []
        for name in names:
            broker_data = broker_table.get(name)
            if broker_data is None:
                continue
            addrs = broker_data.broker_addrs
            if support_acting_master and addrs and MASTER_ID not in addrs:
                return _NOT_JOINED
            if filters and any((broker_data.cluster, addr) in filters for addr in addrs.values()):
                return _NOT_JOINED
            piece = cache.broker_pieces.get((name, standard))
            if piece is None:
                piece = cache.broker_piece(broker_data, standard, encode.encode_piece)
            broker_pieces.append(piece)
        if not broker_pieces:
            return None
        queue_piece = cache.queue_piece
        queue_pieces = [queue_piece(queue_map[name], standard, encode.encode_piece) for name in names]
        body = encode.join_topic_route(broker_pieces, queue_pieces, order_topic_conf, standard)
        if order_topic_conf is None:
            body = cache.remember_joined(topic, (standard, support_acting_master), body)
        return body

    def broker_topic_count(self, broker_name: str) -> int:
        """How many topics have QueueData of ``broker_name`` (the status page shows it per group)."""
        return self.tables.topic_count_of(broker_name)

    def topic_broker_names(self, topic: str) -> list[str]:
        queue_map = self.tables.topic_queue_table.get(topic)
        return sorted(queue_map) if queue_map else []

    # -- cluster info --------------------------------------------------------------------
    def cluster_info_body(self) -> bytes:
        """GET_BROKER_CLUSTER_INFO's body (plain fastjson), rebuilt only after broker changes."""
        cache = self.body_cache
        if cache.cluster_info is None:
            tables = self.tables
            cache.cluster_info = encode.encode_cluster_info(tables.broker_addr_table, tables.cluster_addr_table)
        return cache.cluster_info

    def get_all_cluster_info(self) -> tuple[dict[str, BrokerData], dict[str, set[str]]]:
        """Copies: ({brokerName: BrokerData}, {cluster: set(brokerName)})."""
        return ({name: bd.copy() for name, bd in self.tables.broker_addr_table.items()},
                {cluster: set(names) for cluster, names in self.tables.cluster_addr_table.items()})

    def broker_member_group(self, cluster: str, broker_name: str) -> dict[int, str]:
        """GET_BROKER_MEMBER_GROUP: a copy of the broker's id -> address map ({} if unknown)."""
        broker_data = self.tables.broker_addr_table.get(broker_name)
        return dict(broker_data.broker_addrs) if broker_data is not None else {}

    # -- topic lists ---------------------------------------------------------------------
    def topic_names(self) -> list[str]:
        return sorted(self.tables.topic_queue_table)

    def all_topic_list_body(self) -> bytes:
        cache = self.body_cache
        if cache.topic_list is None:
            cache.topic_list = encode.encode_topic_list(sorted(self.tables.topic_queue_table))
        return cache.topic_list

    def all_topic_list_sliced(self, limit: int) -> Steps[bytes]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER's body within ``limit`` bytes, a slice per step
        (topiclists.py), or TooLarge: both kept until a topic comes or goes."""
        cache = self.body_cache
        if cache.topic_list is not None:
            if len(cache.topic_list) <= limit:
                return cache.topic_list
            raise topiclists.TooLarge(len(self.tables.topic_queue_table), len(cache.topic_list), limit)
        refused = cache.topic_list_refused
        if refused is not None and refused.size > limit:
            raise topiclists.TooLarge(refused.count, refused.size, limit)
        generation = cache.topic_set_generation
        names = yield from topiclists.all_names(self.tables)
        try:
            body = yield from topiclists.topic_list_body(names, limit)
        except topiclists.TooLarge as refusal:
            if cache.topic_set_generation == generation:
                cache.topic_list_refused = refusal
            raise
        if cache.topic_set_generation == generation:
            cache.topic_list = body
        return body

    def topics_by_cluster_sliced(self, cluster: str, limit: int) -> Steps[bytes]:
        """GET_TOPICS_BY_CLUSTER's body within ``limit`` bytes, a slice per step, or TooLarge."""
        names = yield from topiclists.names_by_cluster(self.tables, cluster)
        return (yield from topiclists.topic_list_body(names, limit))

    def topics_by_sys_flag_sliced(self, accept: Callable[[int], object], limit: int) -> Steps[bytes]:
        """A unit-topic list's body (``accept``: a ``topiclists.is_unit*``) within ``limit`` bytes, or TooLarge."""
        names = yield from topiclists.names_by_sys_flag(self.tables, accept)
        return (yield from topiclists.topic_list_body(names, limit))

    def topics_by_cluster(self, cluster: str) -> list[str]:
        """Topics with QueueData on any broker of ``cluster`` (unknown cluster: [])."""
        return sorted(topiclists.drain(topiclists.names_by_cluster(self.tables, cluster)))

    def system_topic_list(self) -> tuple[list[str], Optional[str]]:
        """(cluster names + broker names, an address of some broker or None)."""
        topics: set[str] = set()
        for cluster, names in self.tables.cluster_addr_table.items():
            topics.add(cluster)
            topics.update(names)
        broker_addr = None
        for name in sorted(self.tables.broker_addr_table):
            addrs = self.tables.broker_addr_table[name].broker_addrs
            if addrs:
                broker_addr = addrs[min(addrs)]
                break
        return sorted(topics), broker_addr

    def _topics_by_first_sys_flag(self, accept: Callable[[int], object]) -> list[str]:
        return sorted(topiclists.drain(topiclists.names_by_sys_flag(self.tables, accept)))

    def unit_topics(self) -> list[str]:
        return self._topics_by_first_sys_flag(topiclists.is_unit)

    def has_unit_sub_topics(self) -> list[str]:
        return self._topics_by_first_sys_flag(topiclists.is_unit_sub)

    def has_unit_sub_ununit_topics(self) -> list[str]:
        return self._topics_by_first_sys_flag(topiclists.is_unit_sub_ununit)

    def stats(self) -> dict[str, int]:
        """Sizes of the tables, for logs and metrics."""
        tables = self.tables
        return {"topics": len(tables.topic_queue_table), "brokerNames": len(tables.broker_addr_table),
                "clusters": len(tables.cluster_addr_table), "liveBrokers": len(tables.broker_live_table),
                "filterServers": len(tables.filter_server_table), "cachedRoutes": len(self.body_cache.routes)}


def _copy_mapping(info: MappingInfo) -> MappingInfo:
    copy = dict(info)
    if isinstance(copy.get("currIdMap"), dict):
        copy["currIdMap"] = dict(copy["currIdMap"])
    return copy


def _apply_acting_master(topic: str, route: TopicRouteData) -> None:
    """5.x supportActingMaster: show the smallest-id slave of a masterless, read-only group as id 0.

    Only the answer changes, never the tables.
    """
    if topic.startswith(SYNC_BROKER_MEMBER_GROUP_PREFIX) or not route.broker_datas or not route.queue_datas:
        return
    if not any(bd.broker_addrs and MASTER_ID not in bd.broker_addrs for bd in route.broker_datas):
        return
    perms = {qd.broker_name: qd.perm for qd in route.queue_datas}
    for broker_data in route.broker_datas:
        addrs = broker_data.broker_addrs
        if not addrs or MASTER_ID in addrs or not broker_data.enable_acting_master:
            continue
        perm = perms.get(broker_data.broker_name)
        if perm is not None and not perm & PERM_WRITE:
            addrs[MASTER_ID] = addrs.pop(min(addrs))


def filter_by_zone(route: TopicRouteData, zone_name: str) -> TopicRouteData:
    """5.x ZoneRouteRPCHook on a route answer: keep the brokers of ``zone_name`` (case-insensitive)
    and every group without a master; drop the others' QueueData and filter servers."""
    wanted = zone_name.lower()
    kept, removed = [], []
    for broker_data in route.broker_datas:
        in_zone = broker_data.zone_name is not None and broker_data.zone_name.lower() == wanted
        if in_zone or MASTER_ID not in broker_data.broker_addrs:
            kept.append(broker_data)
        else:
            removed.append(broker_data)
    removed_names = {bd.broker_name for bd in removed}
    route.broker_datas = kept
    route.queue_datas = [qd for qd in route.queue_datas if qd.broker_name not in removed_names]
    for broker_data in removed:
        for addr in broker_data.broker_addrs.values():
            route.filter_server_table.pop(addr, None)
    return route
