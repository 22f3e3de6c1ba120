"""The route tables as rows of plain values (lists, strings, ints): one shape for every copy.

Route snapshots (snapshot.py, msgpack on disk) and read workers' replicas (readworkers,
pickled down a pipe) both carry the tables as these rows, so a change to a table's shape
is made once. Building tables back from rows is up to each reader: a snapshot validates
every value (the file may be corrupt), a replica trusts its own main process.
"""


def queue_data_rows(queue_map):
    """A topic's QueueData: [[brokerName, readQueueNums, writeQueueNums, perm, topicSysFlag], ...]."""
    return [queue_data_row(qd) for qd in queue_map.values()]


def topic_rows(routes):
    """Every topic: {topic: queue_data_rows}."""
    return {topic: queue_data_rows(queue_map) for topic, queue_map in routes.topic_queue_table.items()}


def broker_rows(routes):
    """BrokerData: [[brokerName, cluster, zoneName, enableActingMaster, [[brokerId, addr], ...]], ...]."""
    return [[bd.broker_name, bd.cluster, bd.zone_name, bd.enable_acting_master,
             [[broker_id, addr] for broker_id, addr in bd.broker_addrs.items()]]
            for bd in routes.broker_addr_table.values()]


def cluster_rows(routes):
    """{cluster: sorted brokerNames}."""
    return {cluster: sorted(names) for cluster, names in routes.cluster_addr_table.items()}


def filter_rows(routes):
    """[[cluster, brokerAddr, [filterServer, ...]], ...]."""
    return [[cluster, addr, list(servers)] for (cluster, addr), servers in routes.filter_server_table.items()]


def live_rows(routes):
    """[[cluster, addr, brokerName, brokerId, haServerAddr, heartbeatTimeoutMillis,
    [timestamp, counter, stateVersion]], ...] (no connection, no last-update time: a copy's
    reader decides those)."""
    return [[cluster, addr, live.broker_name, live.broker_id, live.ha_server_addr, live.heartbeat_timeout_millis,
             [live.data_version.timestamp, live.data_version.counter, live.data_version.state_version]]
            for (cluster, addr), live in routes.broker_live_table.items()]


def broker_level_rows(routes):
    """The broker-level tables whole: what a replica's final message and a snapshot both carry."""
    return {"brokers": broker_rows(routes), "clusters": cluster_rows(routes), "filters": filter_rows(routes)}


def queue_data_row(queue_data):
    return [queue_data.broker_name, queue_data.read_queue_nums, queue_data.write_queue_nums, queue_data.perm,
            queue_data.topic_sys_flag]


def topic_shapes(routes, topics=None):
    """The QueueData of ``topics`` (None: every topic) by shape, each thing written once:
    ``{"queueDatas": [queue_data_row, ...], "shapes": [[index into queueDatas, ...], ...],
    "topics": {topic: index into shapes, or None for a topic that is gone}}``.

    A fleet has few distinct QueueData (they are shared, one per broker and settings) and
    few distinct sets of them (the topics created on the same brokers), so 1,000,000
    (topic, broker) entries travel as 100,000 small integers and a few thousand rows.
    """
    table = routes.topic_queue_table
    items = table.items() if topics is None else ((topic, table.get(topic)) for topic in topics)
    row_of, queue_rows = {}, []
    shape_of, shapes = {}, []
    by_topic = {}
    for topic, queue_map in items:
        if not queue_map:
            by_topic[topic] = None
            continue
        key = tuple(map(id, queue_map.values()))
        shape = shape_of.get(key)
        if shape is None:
            indexes = []
            for queue_data in queue_map.values():
                index = row_of.get(id(queue_data))
                if index is None:
                    index = row_of[id(queue_data)] = len(queue_rows)
                    queue_rows.append(queue_data_row(queue_data))
                indexes.append(index)
            shape = shape_of[key] = len(shapes)
            shapes.append(indexes)
        by_topic[topic] = shape
    return {"queueDatas": queue_rows, "shapes": shapes, "topics": by_topic}
