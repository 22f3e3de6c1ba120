"""Consistency rules of the route tables, checked by tests after every kind of change.

1. No topic without QueueData; every QueueData is filed under its own broker name.
2. The reverse index brokerName -> topics is exactly the QueueData present.
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


def check_invariants(tables, body_cache=None, per_topic=True):
    """``tables``: a RouteTables; ``body_cache``: the RouteBodyCache kept beside them, if any.

    ``per_topic=False`` skips rules 1 and 2, which hold by construction for tables built from checked
    topic shapes (``RouteTables.replace_from_rows(shapes=...)``): the rest is per broker, not per entry.
    """
    topics = tables.topic_queue_table
    if per_topic:
        for topic, queue_map in topics.items():
            assert queue_map, "topic %r has no queue data" % topic
            for name, queue_data in queue_map.items():
                assert queue_data.broker_name == name, "QueueData of %r filed under %r" % (queue_data.broker_name,
                                                                                          name)
        index = {}
        for topic, queue_map in topics.items():
            for name in queue_map:
                index.setdefault(name, set()).add(topic)
        assert index == tables.broker_topics, "reverse index out of sync"
    else:
        index = tables.broker_topics

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

    expected = {}
    for key, live in tables.broker_live_table.items():
        if live.connection is not None:
            expected.setdefault(live.connection, set()).add(key)
    assert expected == tables.by_connection, "connection index out of sync"

    for key in tables.filter_server_table:
        assert key in tables.broker_live_table, "filter servers of %r without a live entry" % (key,)

    for topic in body_cache.routes if body_cache is not None else ():
        assert topic in topics, "cached route of vanished topic %r" % topic
