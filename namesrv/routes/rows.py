"""The route tables as rows of plain values (lists, strings, ints): one shape for every copy.

Route snapshots (snapshot.py, msgpack on disk) and read workers' replicas (readworkers,
pickled down a pipe) both carry the tables as these rows, so a change to a table's shape
is made once. Building tables back from rows is up to each reader: a snapshot validates
every value (the file may be corrupt), a replica trusts its own main process.
"""


def queue_data_rows(queue_map):
    """A topic's QueueData: [[brokerName, readQueueNums, writeQueueNums, perm, topicSysFlag], ...]."""
    return [[qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm, qd.topic_sys_flag]
            for qd in queue_map.values()]


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
