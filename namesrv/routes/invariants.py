"""Consistency rules of the route tables, checked by tests after every kind of change.

1. No topic without QueueData; every QueueData is filed under its own broker name.
2. Every topic's map is interned and lists the topic, every interned map lists exactly the topics
   that have it (none without topics), and the index brokerName -> maps is exactly the maps holding it.
3. Every broker name with QueueData has a BrokerData (register/REGISTER_TOPIC only write
   QueueData for known brokers; removing a BrokerData removes its QueueData).
4. No BrokerData without addresses (we check the 5.x single-topic refusal before changing
   anything, so Java's transient empty BrokerData never exists here), and an address
   appears once per BrokerData.
5. No empty cluster set; cluster sets only name existing BrokerDatas, and every BrokerData
   is in at least one cluster set.
6. The connection index is exactly the live entries that carry a connection.
7. Filter servers only exist for live entries.
8. Cached route bodies only exist for topics that exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IRemotingConnection
    from namesrv.routes.bodycache import RouteBodyCache
    from namesrv.routes.model import LiveKey
    from namesrv.routes.queuemaps import MapKey, QueueMap
    from namesrv.routes.tables import RouteTables


def check_invariants(tables: RouteTables, body_cache: Optional[RouteBodyCache] = None, per_topic: bool = True) -> None:
    """``tables``: a RouteTables; ``body_cache``: the RouteBodyCache kept beside them, if any.

    ``per_topic=False`` skips rules 1 and 2, which hold by construction for tables built from checked
    topic shapes (``RouteTables.replace_from_rows(shapes=...)``): the rest is per broker, not per entry.
    """
    topics = tables.topic_queue_table
    maps = tables.queue_maps
    if per_topic:
        for topic, queue_map in topics.items():
            assert queue_map, "topic %r has no queue data" % topic
            assert maps.maps.get(queue_map.key) is queue_map, "topic %r has a map that is not interned" % topic
            assert topic in queue_map.topics, "topic %r missing from its map's topics" % topic
            for name, queue_data in queue_map.items():
                assert queue_data.broker_name == name, "QueueData of %r filed under %r" % (queue_data.broker_name,
                                                                                          name)
        for queue_map in maps:
            assert queue_map.topics, "a map without topics is kept"
            for topic in queue_map.topics:
                assert topics.get(topic) is queue_map, "topic %r listed by a map it does not have" % topic
        index: dict[str, dict[MapKey, QueueMap]] = {}
        for queue_map in maps:
            for name in queue_map:
                index.setdefault(name, {})[queue_map.key] = queue_map
        assert index == maps.by_broker, "reverse index out of sync"
    index = maps.by_broker

    for name in index:
        assert name in tables.broker_addr_table, "broker %r has queue data but no BrokerData" % name

    clustered = set()
    for cluster, names in tables.cluster_addr_table.items():
        assert names, "cluster %r has no brokers" % cluster
        for name in names:
            assert name in tables.broker_addr_table, "cluster %r lists unknown broker %r" % (cluster, name)
        clustered.update(names)
    for name, broker_data in tables.broker_addr_table.items():
        assert broker_data.broker_name == name
        assert broker_data.broker_addrs, "broker %r has no addresses" % name
        addrs = list(broker_data.broker_addrs.values())
        assert len(addrs) == len(set(addrs)), "broker %r lists an address twice" % name
        assert name in clustered, "broker %r is in no cluster" % name

    expected: dict[IRemotingConnection, set[LiveKey]] = {}
    for key, live in tables.broker_live_table.items():
        if live.connection is not None:
            expected.setdefault(live.connection, set()).add(key)
    assert expected == tables.by_connection, "connection index out of sync"

    for key in tables.filter_server_table:
        assert key in tables.broker_live_table, "filter servers of %r without a live entry" % (key,)

    for topic in body_cache.routes if body_cache is not None else ():
        assert topic in topics, "cached route of vanished topic %r" % topic
