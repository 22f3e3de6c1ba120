"""The route tables as rows of plain values (lists, strings, ints): one shape for every copy.

Route snapshots (snapshot.py, msgpack on disk) and read workers' replicas (readworkers,
pickled down a pipe) both carry the tables as these rows, so a change to a table's shape
is made once. Building tables back from rows is up to each reader: a snapshot validates
every value (the file may be corrupt), a replica trusts its own main process.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import eq, is_
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union, cast

if TYPE_CHECKING:   # types only
    from namesrv.routes.manager import RouteInfoManager
    from namesrv.routes.model import BrokerData, QueueData
    from namesrv.routes.queuemaps import QueueMap
    from namesrv.routes.tables import RouteTables

#: one row: plain values of mixed types in a list (as msgpack and the replicas' pipe carry them; each function
#: below says its fields)
Row = list[Any]
#: ``topic_shapes``' map: "queueDatas" [Row], "shapes" [[int]], and "topics" {topic: int or None} or
#: "groups" [[topic]] with "gone" [topic]
TopicShapes = dict[str, Any]
#: what the rows are read from: the manager, or the tables themselves
Routes = Union["RouteInfoManager", "RouteTables"]


def queue_data_rows(queue_map: Mapping[str, QueueData]) -> list[Row]:
    """A topic's QueueData: [[brokerName, readQueueNums, writeQueueNums, perm, topicSysFlag], ...]."""
    return [queue_data_row(qd) for qd in queue_map.values()]


def topic_rows(routes: Routes) -> dict[str, list[Row]]:
    """Every topic: {topic: queue_data_rows}."""
    return {topic: queue_data_rows(queue_map) for topic, queue_map in routes.topic_queue_table.items()}


def broker_rows(routes: Routes, broker_datas: Optional[Iterable[BrokerData]] = None) -> list[Row]:
    """BrokerData (``broker_datas``, or every one): [[brokerName, cluster, zoneName, enableActingMaster,
    [[brokerId, addr], ...]], ...]."""
    return [[bd.broker_name, bd.cluster, bd.zone_name, bd.enable_acting_master,
             [[broker_id, addr] for broker_id, addr in bd.broker_addrs.items()]]
            for bd in (routes.broker_addr_table.values() if broker_datas is None else broker_datas)]


def cluster_rows(routes: Routes) -> dict[str, list[str]]:
    """{cluster: sorted brokerNames}."""
    return {cluster: sorted(names) for cluster, names in routes.cluster_addr_table.items()}


def filter_rows(routes: Routes) -> list[Row]:
    """[[cluster, brokerAddr, [filterServer, ...]], ...]."""
    return [[cluster, addr, list(servers)] for (cluster, addr), servers in routes.filter_server_table.items()]


def live_rows(routes: Routes) -> list[Row]:
    """[[cluster, addr, brokerName, brokerId, haServerAddr, heartbeatTimeoutMillis,
    [timestamp, counter, stateVersion]], ...] (no connection, no last-update time: a copy's
    reader decides those)."""
    return [[cluster, addr, live.broker_name, live.broker_id, live.ha_server_addr, live.heartbeat_timeout_millis,
             [live.data_version.timestamp, live.data_version.counter, live.data_version.state_version]]
            for (cluster, addr), live in routes.broker_live_table.items()]


def broker_level_rows(routes: Routes) -> dict[str, Any]:
    """The broker-level tables whole: what a replica's final message and a snapshot both carry."""
    return {"brokers": broker_rows(routes), "clusters": cluster_rows(routes), "filters": filter_rows(routes)}


def queue_data_row(queue_data: QueueData) -> Row:
    return [queue_data.broker_name, queue_data.read_queue_nums, queue_data.write_queue_nums, queue_data.perm,
            queue_data.topic_sys_flag]


def topic_shapes(routes: Routes, topics: Optional[Iterable[str]] = None, grouped: bool = False) -> TopicShapes:
    """The QueueData of ``topics`` (None: every topic) by shape, each thing written once:
    ``{"queueDatas": [queue_data_row, ...], "shapes": [[index into queueDatas, ...], ...], "topics": {topic:
    index into shapes, or None for a topic that is gone}}``; ``grouped``: instead of "topics", "groups" (the
    topics of each shape: [[topic, ...], ...]) and "gone" ([topic, ...]), which a reader applies a shape at a
    time without looking at each topic.

    A fleet has few distinct QueueData (they are shared, one per broker and settings) and few distinct
    maps of them (the tables' interned QueueMaps: the topics created on the same brokers), so 1,000,000
    (topic, broker) entries travel as a thousand shapes and their topics. Built per map, in C.
    """
    tables = cast("RouteTables", getattr(routes, "tables", routes))
    by_topic: dict[str, Any]
    if topics is None:
        qmaps = [qmap for qmap in tables.queue_maps if qmap.topics]
        if grouped:
            by_topic = {"groups": [list(qmap.topics) for qmap in qmaps], "gone": []}
        else:
            indexes: dict[str, int] = {}
            for index, qmap in enumerate(qmaps):
                indexes.update(dict.fromkeys(qmap.topics, index))
            by_topic = {"topics": indexes}
    else:
        named = list(topics)
        found = list(map(tables.topic_queue_table.get, named))
        ids = list(map(id, found))
        qmaps = [qmap for qmap in dict(zip(ids, found)).values() if qmap]
        if grouped:
            by_topic = {"groups": [list(compress(named, map(eq, ids, repeat(id(qmap))))) for qmap in qmaps],
                        "gone": list(compress(named, map(is_, found, repeat(None))))}
        else:
            index_of = {id(qmap): i for i, qmap in enumerate(qmaps)}
            by_topic = {"topics": dict(zip(named, map(index_of.get, ids)))}
    return dict(shape_rows(qmaps), **by_topic)


def moved_shapes(moves: list[tuple[list[str], Optional[QueueMap]]]) -> TopicShapes:
    """``topic_shapes(..., grouped=True)`` from moves ((topics, their map now, None if gone), each topic once):
    a group per move, no look at each topic."""
    gone = [name for names, qmap in moves if qmap is None for name in names]
    kept = [(names, qmap) for names, qmap in moves if qmap is not None]
    return dict(shape_rows([qmap for _, qmap in kept]), groups=[names for names, _ in kept], gone=gone)


def shape_rows(qmaps: Iterable[Mapping[str, QueueData]]) -> TopicShapes:
    """{"queueDatas": each QueueData of ``qmaps`` once, "shapes": a list of row indexes per map}."""
    row_of: dict[int, int] = {}
    queue_rows: list[Row] = []
    shapes: list[list[int]] = []
    for qmap in qmaps:
        indexes = []
        for queue_data in qmap.values():
            row = row_of.get(id(queue_data))
            if row is None:
                row = row_of[id(queue_data)] = len(queue_rows)
                queue_rows.append(queue_data_row(queue_data))
            indexes.append(row)
        shapes.append(indexes)
    return {"queueDatas": queue_rows, "shapes": shapes}
